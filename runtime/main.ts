// `npm start`: the service on the configured store (embedded in DATA_DIR unless MONGODB_URL is set).
import { ConfigError, loadConfig } from './config.ts';
import { startService } from './service.ts';
import { SpecLoadError } from './spec/loader.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const service = await startService({ config });
  console.error(`tool server listening on ${service.url} (store: ${service.store.kind}, ${service.catalog.tools.size} tools)`);
  const stop = async (signal: string) => {
    service.logger.info({ signal }, 'shutting down');
    await service.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof SpecLoadError) console.error(err.message);
  else console.error(err);
  process.exit(1);
});
