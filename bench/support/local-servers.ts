// kinesalite and dynalite in a child process of their own, so that a benchmark's CPU and memory
// figures are the consumer's, not the servers'. The child prints its endpoints as one JSON line.
// With --tls it also puts a TLS endpoint (node:http2, HTTP/1.1 allowed, a self-signed certificate
// made at start) in front of each: the production path's transport (test/support/tls-front.ts);
// a consumer trusts the certificate through NODE_EXTRA_CA_CERTS=<caFile>.
//
//   node --import tsx bench/support/local-servers.ts --serve [--kinesis-path <folder>] [--tls]
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { LocalAwsConfig } from '../../src/testing/index.js';
import { startDynalite, startKinesalite } from '../../src/testing/index.js';
import { selfSigned } from '../../test/support/self-signed.js';
import { startTlsFront } from '../../test/support/tls-front.js';

/** Local servers running in a child process. */
export interface ServerProcess extends LocalAwsConfig {
  /** The child's process id (for CPU sampling). */
  readonly pid: number;
  /** With `tls`: the same servers behind TLS endpoints, and the certificate file to trust. */
  readonly tls?: LocalAwsConfig & { readonly caFile: string };
  stop(): Promise<void>;
}

interface Endpoints {
  readonly kinesis: string;
  readonly dynamodb: string;
  readonly tls?: { readonly kinesis: string; readonly dynamodb: string; readonly caFile: string };
}

const CREDENTIALS = { accessKeyId: 'AKIDLOCALBENCH', secretAccessKey: 'local-bench' } as const;

/** Starts kinesalite (in memory, or on a LevelDB folder) and dynalite in a child process; with `tls`, TLS endpoints in front of them. */
export async function startServerProcess(options: { readonly kinesisPath?: string; readonly tls?: boolean } = {}): Promise<ServerProcess> {
  const args = [
    '--import', 'tsx', fileURLToPath(import.meta.url), '--serve',
    ...(options.kinesisPath === undefined ? [] : ['--kinesis-path', options.kinesisPath]), ...(options.tls === true ? ['--tls'] : []),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done === true) throw new Error('the local servers exited before listening');
  const { tls, ...endpoints } = JSON.parse(String(first.value)) as Endpoints;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    region: 'us-east-1',
    endpoints,
    credentials: CREDENTIALS,
    pid: child.pid ?? -1,
    ...(tls === undefined ? {} : {
      tls: { region: 'us-east-1', endpoints: { kinesis: tls.kinesis, dynamodb: tls.dynamodb }, credentials: CREDENTIALS, caFile: tls.caFile },
    }),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function serve(kinesisPath: string | undefined, tls: boolean): Promise<void> {
  const kinesis = await startKinesalite(kinesisPath === undefined ? { shardLimit: 1000 } : { path: kinesisPath, shardLimit: 1000 });
  const dynamodb = await startDynalite();
  const endpoints: Endpoints = { kinesis: kinesis.endpoint, dynamodb: dynamodb.endpoint, ...(tls ? { tls: await tlsFronts(kinesis.endpoint, dynamodb.endpoint) } : {}) };
  process.stdout.write(`${JSON.stringify(endpoints)}\n`);
  const stop = (): void => {
    void Promise.allSettled([kinesis.stop(), dynamodb.stop()]).finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  // The parent died without stopping us (SIGKILL, crash): do not outlive it.
  const parent = process.ppid;
  setInterval(() => { if (process.ppid !== parent) stop(); }, 1000).unref();
}

/** TLS endpoints in front of both servers (their certificate written to a file of its own). */
async function tlsFronts(kinesis: string, dynamodb: string): Promise<NonNullable<Endpoints['tls']>> {
  const certificate = selfSigned();
  const caFile = join(mkdtempSync(join(tmpdir(), 'kinsumer-bench-tls-')), 'ca.pem');
  writeFileSync(caFile, certificate.cert);
  const [kinesisFront, dynamoFront] = await Promise.all([startTlsFront(kinesis, certificate), startTlsFront(dynamodb, certificate)]);
  return { kinesis: kinesisFront.endpoint, dynamodb: dynamoFront.endpoint, caFile };
}

if (process.argv.includes('--serve')) {
  const at = process.argv.indexOf('--kinesis-path');
  serve(at >= 0 ? process.argv[at + 1] : undefined, process.argv.includes('--tls')).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
