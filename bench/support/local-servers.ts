// kinesalite and dynalite in a child process of their own, so that a benchmark's CPU and memory
// figures are the consumer's, not the servers'. The child prints its endpoints as one JSON line.
//
//   node --import tsx bench/support/local-servers.ts --serve [--kinesis-path <folder>]
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { LocalAwsConfig } from '../../src/testing/index.js';
import { startDynalite, startKinesalite } from '../../src/testing/index.js';

/** Local servers running in a child process. */
export interface ServerProcess extends LocalAwsConfig {
  /** The child's process id (for CPU sampling). */
  readonly pid: number;
  stop(): Promise<void>;
}

const CREDENTIALS = { accessKeyId: 'AKIDLOCALBENCH', secretAccessKey: 'local-bench' } as const;

/** Starts kinesalite (in memory, or on a LevelDB folder) and dynalite in a child process. */
export async function startServerProcess(options: { readonly kinesisPath?: string } = {}): Promise<ServerProcess> {
  const args = ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve', ...(options.kinesisPath === undefined ? [] : ['--kinesis-path', options.kinesisPath])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done === true) throw new Error('the local servers exited before listening');
  const endpoints = JSON.parse(String(first.value)) as { kinesis: string; dynamodb: string };
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    region: 'us-east-1',
    endpoints,
    credentials: CREDENTIALS,
    pid: child.pid ?? -1,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function serve(kinesisPath: string | undefined): Promise<void> {
  const kinesis = await startKinesalite(kinesisPath === undefined ? { shardLimit: 1000 } : { path: kinesisPath, shardLimit: 1000 });
  const dynamodb = await startDynalite();
  process.stdout.write(`${JSON.stringify({ kinesis: kinesis.endpoint, dynamodb: dynamodb.endpoint })}\n`);
  const stop = (): void => {
    void Promise.allSettled([kinesis.stop(), dynamodb.stop()]).finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  // The parent died without stopping us (SIGKILL, crash): do not outlive it.
  const parent = process.ppid;
  setInterval(() => { if (process.ppid !== parent) stop(); }, 1000).unref();
}

if (process.argv.includes('--serve')) {
  const at = process.argv.indexOf('--kinesis-path');
  serve(at >= 0 ? process.argv[at + 1] : undefined).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
