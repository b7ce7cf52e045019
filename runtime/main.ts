// `npm start`: the service on the configured store (embedded in DATA_DIR unless MONGODB_URL is set).
// WORKERS=N runs N processes sharing the port (node:cluster); only with MongoDB, which they share.
// SIGHUP reloads the tool specs (in every worker: the primary passes it on).
import cluster from 'node:cluster';
import { ConfigError, loadConfig } from './config.ts';
import { startService } from './service.ts';
import { DataDirLockedError } from './store/dir-lock.ts';
import { SpecLoadError } from './toolspec/loader.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const workers = Number(process.env.WORKERS || 1);
  if (!Number.isInteger(workers) || workers < 1) throw new ConfigError(`WORKERS must be a positive integer (got "${process.env.WORKERS}")`);
  if (workers > 1 && cluster.isPrimary) {
    if (!config.mongodbUrl) throw new ConfigError('WORKERS > 1 needs MONGODB_URL: the embedded store belongs to a single process');
    for (let i = 0; i < workers; i++) cluster.fork();
    cluster.on('exit', (worker, code, signal) => {
      if (signal !== 'SIGTERM' && code !== 0) {
        console.error(`worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
        cluster.fork();
      }
    });
    const stop = () => {
      for (const w of Object.values(cluster.workers ?? {})) w?.kill('SIGTERM');
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    process.on('SIGHUP', () => {
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGHUP');
    });
    return;
  }
  // Handled from the first moment (its default action ends the process): a SIGHUP during the start reloads
  // once the catalog is in use, since the start may have read the folder before the change that prompted it.
  let ready: Awaited<ReturnType<typeof startService>> | undefined;
  let hupDuringStart = false;
  process.on('SIGHUP', () => {
    if (ready) ready.catalog.reload('SIGHUP').catch(() => undefined);
    else hupDuringStart = true;
  });
  const service = (ready = await startService({ config }));
  console.error(`tool server listening on ${service.url} (store: ${service.store.kind}, ${service.catalog.current.tools.size} tools)`);
  if (hupDuringStart) service.catalog.reload('SIGHUP').catch(() => undefined);
  const stop = async (signal: string) => {
    service.logger.info({ signal }, 'shutting down');
    await service.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof SpecLoadError || err instanceof DataDirLockedError) console.error(err.message);
  else console.error(err);
  process.exit(1);
});
