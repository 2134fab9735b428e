// What the CPU figures share (bench/cpu.ts over plain HTTP, bench/tls.ts over TLS): a consumer run
// in a child process of its own (bench/support/cpu-consumer.ts), preloaded shards, rotated rounds.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { createStream, openShardIds, putRecords } from '../../src/testing/index.js';
import type { Job, JobResult, Span } from './cpu-consumer.js';
import type { CallLog } from './dynamo-calls.js';
import { log } from './harness.js';

const CONSUMER = fileURLToPath(new URL('./cpu-consumer.ts', import.meta.url));

/**
 * Runs one consumer in a child process of its own (`env` added to this process's). With `dynamoLog`
 * (a counting proxy's, in front of the DynamoDB the job points at), the DynamoDB calls of its
 * measured spans are counted from it.
 */
export async function runChild(job: Job, env: Readonly<Record<string, string>> = {}, dynamoLog?: CallLog): Promise<JobResult> {
  const result = await spawnChild(job, env);
  if (dynamoLog === undefined) return result;
  const count = (span: Span | undefined) => (span === undefined ? 0 : dynamoLog.between(span.fromMs, span.toMs).length);
  return {
    ...result,
    ...(result.calls === undefined ? {} : { calls: { ...result.calls, dynamodb: count(result.window) } }),
    ...(result.idle === undefined ? {} : { idle: { ...result.idle, calls: { ...result.idle.calls, dynamodb: count(result.idle.window) } } }),
  };
}

function spawnChild(job: Job, env: Readonly<Record<string, string>>): Promise<JobResult> {
  return new Promise((resolve, reject) => {
    // CHILD_NODE_FLAGS: V8 or Node flags for the consumer processes only (--trace-gc, ...), for a look.
    const flags = process.env.CHILD_NODE_FLAGS?.split(' ').filter((f) => f !== '') ?? [];
    const child = spawn(process.execPath, [...flags, '--import', 'tsx', CONSUMER, JSON.stringify(job)], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString(); });
    child.once('exit', (code, signal) => {
      if (code !== 0) {
        reject(new Error(`${job.consumer} failed (${signal ?? `exit code ${code}`})`));
        return;
      }
      try {
        const lines = out.trim().split('\n');
        // Anything before the result (a --trace-gc from CHILD_NODE_FLAGS) goes on to stderr.
        if (lines.length > 1) process.stderr.write(`${lines.slice(0, -1).join('\n')}\n`);
        resolve(JSON.parse(lines.at(-1) ?? '') as JobResult);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
}

/** `list` turned by `by` places: round r starts with another consumer. */
export function rotate<T>(list: readonly T[], by: number): T[] {
  const k = by % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

export const microsPerRecord = (run: JobResult): number => run.cpuMicros / Math.max(1, run.records);

/** A stream of one shard holding `records` records of `bytes` bytes each. */
export async function preloadShard(kinesis: KinesisClient, streamName: string, records: number, bytes: number): Promise<{ streamName: string; shardId: string }> {
  await createStream(kinesis, streamName, 1);
  const [shardId] = await openShardIds(kinesis, streamName);
  if (shardId === undefined) throw new Error(`${streamName} has no shard`);
  const payload = new Uint8Array(bytes).fill(120);
  const started = Date.now();
  for (let at = 0; at < records; at += 5000) {
    const count = Math.min(5000, records - at);
    await putRecords(kinesis, streamName, Array.from({ length: count }, (_, i) => ({ partitionKey: `k${at + i}`, data: payload })));
  }
  log(`${streamName}: ${records} records of ${bytes} B loaded in ${Date.now() - started} ms`);
  return { streamName, shardId };
}
