// An endless Kinesis over HTTP for the memory figure's large records: it speaks Kinesis's JSON for
// ListShards, GetShardIterator and GetRecords, and every shard holds an endless backlog of records
// of one size (a page: as many as Limit asks, at most 10 MiB, at least one). No local server can
// serve a backlog of 1 MiB or 10 MiB records at the rate a memory bound needs: kinesalite stops at
// 1 MiB, and kinesis-local takes about 20 s to put one record of 10 MiB. It stores nothing: run it
// in a process of its own, and the reader's RSS is the reader's.
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Options of {@link serveSyntheticKinesis}. */
export interface SyntheticKinesisOptions {
  readonly shards: number;
  readonly recordBytes: number;
}

const MAX_PAGE_BYTES = 10 * 1024 * 1024;
const shardName = (index: number): string => `shardId-${String(index).padStart(12, '0')}`;
const sequenceOf = (shard: number, index: number): string => `4959${String(shard).padStart(4, '0')}${String(index).padStart(48, '0')}`;

/** Starts the server on 127.0.0.1, port 0. */
export async function serveSyntheticKinesis(options: SyntheticKinesisOptions): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const payload = Buffer.alloc(options.recordBytes, 120).toString('base64');
  const perPage = Math.max(1, Math.floor(MAX_PAGE_BYTES / options.recordBytes));
  const answer = (target: string, body: Record<string, unknown>): string => {
    switch (target) {
      case 'ListShards':
        return JSON.stringify({
          Shards: Array.from({ length: options.shards }, (_, i) => ({
            ShardId: shardName(i),
            HashKeyRange: { StartingHashKey: String(i), EndingHashKey: String(i) },
            SequenceNumberRange: { StartingSequenceNumber: sequenceOf(i, 0) },
          })),
        });
      case 'GetShardIterator':
        return JSON.stringify({ ShardIterator: `${Number(String(body['ShardId']).slice(8))}:0` });
      case 'GetRecords': {
        const [shard, from] = String(body['ShardIterator']).split(':').map(Number) as [number, number];
        const count = Math.min(Number(body['Limit'] ?? 10_000), perPage);
        const arrival = Date.now() / 1000;
        const records = Array.from({ length: count }, (_, i) => (
          `{"SequenceNumber":"${sequenceOf(shard, from + i)}","ApproximateArrivalTimestamp":${arrival},"Data":"${payload}","PartitionKey":"k"}`
        ));
        return `{"Records":[${records.join(',')}],"NextShardIterator":"${shard}:${from + count}","MillisBehindLatest":1000}`;
      }
      default:
        throw new Error(`not served: ${target}`);
    }
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const target = String(request.headers['x-amz-target'] ?? '').split('.').pop() ?? '';
      try {
        const text = answer(target, JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>);
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1', date: new Date().toUTCString() });
        response.end(text);
      } catch (error) {
        response.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
        response.end(JSON.stringify({ __type: 'InvalidArgumentException', message: String(error) }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => new Promise((resolve) => server.close(() => resolve())) };
}
