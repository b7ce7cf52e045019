// An https server on 127.0.0.1 with a fresh self-signed certificate (openssl), for what the service fetches
// over https only (client ID metadata documents). Start the service with OUTBOUND_CA_FILE: caFile to trust it.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import type http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface HttpsHost {
  /** https://127.0.0.1:<port> */
  url: string;
  /** The certificate (PEM file) to trust. */
  caFile: string;
  close(): Promise<void>;
}

export async function startHttpsHost(handler: http.RequestListener): Promise<HttpsHost> {
  const dir = await mkdtemp(path.join(tmpdir(), 'https-host-'));
  const [keyFile, caFile] = [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      caFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const server = https.createServer({ key: await readFile(keyFile), cert: await readFile(caFile) }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caFile,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
