// The examples' stand-in for AWS: embedded local servers with a stream full of records, so each
// example runs with `npx tsx examples/<name>.ts` and no account. In your application you pass
// your own `KinesisClient` and `DynamoDBClient` instead.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { KinesisClient } from '@aws-sdk/client-kinesis';
import { createStream, putRecords, startLocalAws } from 'kinsumer/testing';

/** A local stream holding `records` records, and the clients to read it. */
export interface ExampleStream {
  readonly kinesis: KinesisClient;
  readonly dynamodb: DynamoDBClient;
  readonly streamName: string;
  /** How many records were put. */
  readonly records: number;
  /** Stops the local servers. */
  close(): Promise<void>;
}

/** Starts kinesalite + dynalite, creates a stream of `shards` shards and puts `records` records (keys key-0 … key-9). */
export async function exampleStream({ shards = 2, records = 200 }: { shards?: number; records?: number } = {}): Promise<ExampleStream> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const local = await startLocalAws();
  const streamName = 'example-stream';
  await createStream(local.kinesis, streamName, shards);
  const batch = Array.from({ length: records }, (_, i) => ({ partitionKey: `key-${i % 10}`, data: JSON.stringify({ n: i }) }));
  await putRecords(local.kinesis, streamName, batch); // the kit splits it into PutRecords calls of 500
  return { kinesis: local.kinesis, dynamodb: local.dynamodb, streamName, records, close: () => local.stop() };
}
