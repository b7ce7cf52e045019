// `npm run demo`: the demo data set (runtime/demo-data.ts) on embedded storage. Prints ONE JSON line
// {base_url, server_id, api_key, owner_token, operator_token, email, password} on stdout (logs go to stderr):
// open base_url in a browser and sign in with email and password. Runs until SIGINT/SIGTERM.
// PORT and DATA_DIR are honoured.
import { startDemo } from './demo-data.ts';

async function main(): Promise<void> {
  const demo = await startDemo();
  process.stdout.write(
    JSON.stringify({
      base_url: demo.service.url,
      server_id: demo.serverId,
      api_key: demo.apiKey,
      owner_token: demo.owner.token,
      operator_token: demo.service.operatorToken,
      email: demo.owner.email,
      password: demo.owner.password,
    }) + '\n',
  );
  const stop = async () => {
    await demo.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
