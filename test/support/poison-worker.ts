// A worker process for the poison tests (design §9.3): processRecords with maxDeliveries, whose
// handler kills the process on one record — process.exit(1), or it waits there for the test to
// SIGKILL it. It reports over IPC every handler call (with the record's deliveryCount), every record
// processed and every dead letter. Configuration: JSON in argv[2] (see PoisonWorkerConfig).
import { Kinsumer, processRecords, type KinsumerRecord } from '../../src/index.js';
import { localDynamoDbClient, localKinesisClient, type LocalAwsConfig } from '../../src/testing/index.js';

/** What the worker is told. */
export interface PoisonWorkerConfig {
  readonly aws: LocalAwsConfig;
  readonly streamName: string;
  readonly applicationName: string;
  readonly clientId: string;
  /** The data of the record that kills the process. */
  readonly poison: string;
  /** `exit`: process.exit(1) in the handler; `hang`: the handler waits, for the test to SIGKILL the process. */
  readonly onPoison: 'exit' | 'hang';
  readonly maxDeliveries: number;
  /** A table (hash key `record`) onFailure dead-letters into: `{ writes }` adding 1 to the record's item, committed with the checkpoint (design §9.3). */
  readonly deadLetters?: string;
  readonly timings: Readonly<Record<string, number>>;
}

/** What the worker tells its parent. */
export type PoisonWorkerReport =
  | { readonly type: 'handling'; readonly data: string; readonly deliveryCount: number }
  | { readonly type: 'processed'; readonly data: string }
  | { readonly type: 'dead-letter'; readonly data: string; readonly deliveryCount: number; readonly error: string };

const config = JSON.parse(process.argv[2] ?? '{}') as PoisonWorkerConfig;
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const report = (message: PoisonWorkerReport) => new Promise<void>((resolve) => { process.send?.(message, () => resolve()); });
const text = (record: KinsumerRecord) => new TextDecoder().decode(record.data);

const kinsumer = new Kinsumer({
  ...config.timings, streamName: config.streamName, applicationName: config.applicationName, clientId: config.clientId,
  logger: { debug() {}, info() {}, warn() {}, error() {} },
  kinesis: localKinesisClient(config.aws), dynamodb: localDynamoDbClient(config.aws),
});
kinsumer.records$.pipe(processRecords(async (record) => {
  await report({ type: 'handling', data: text(record), deliveryCount: record.deliveryCount });
  if (text(record) === config.poison) {
    if (config.onPoison === 'exit') process.exit(1);
    await new Promise(() => undefined);
  }
  await report({ type: 'processed', data: text(record) });
}, {
  maxDeliveries: config.maxDeliveries,
  onFailure: async ({ record, error }) => {
    await report({ type: 'dead-letter', data: text(record), deliveryCount: record.deliveryCount, error: error instanceof Error ? error.name : String(error) });
    if (config.deadLetters === undefined) return undefined;
    return {
      writes: [{
        Update: {
          TableName: config.deadLetters, Key: { record: { S: text(record) } }, UpdateExpression: 'ADD written :one',
          ExpressionAttributeValues: { ':one': { N: '1' } },
        },
      }],
    };
  },
})).subscribe();
process.on('message', (message) => {
  if (message === 'stop') void kinsumer.stop().finally(() => process.exit(0));
});
