import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { endpointProblem } from '../errors/endpoint-error.js';
import { ConfigError } from '../errors/kinsumer-errors.js';
import {
  startDynalite, startDynamoDbLocal, startKinesalite, startKinesisLocal,
  type RunningServer,
} from './servers.js';

/** Which Kinesis server the kit runs. `kinesis-local` is the fidelity tier (kinesis-mock). */
export type LocalKinesisKind = 'kinesalite' | 'kinesis-local';
/** Which DynamoDB server the kit runs. `dynamodb-local` is Amazon's jar (needs Java 17+). */
export type LocalDynamoDbKind = 'dynalite' | 'dynamodb-local';

/** Options of {@link startLocalAws}. */
export interface LocalAwsOptions {
  /** Default: `KINSUMER_LOCAL_KINESIS` from the environment, else `'kinesalite'`. */
  readonly kinesis?: LocalKinesisKind;
  /** Default: `KINSUMER_LOCAL_DYNAMODB` from the environment, else `'dynalite'`. */
  readonly dynamodb?: LocalDynamoDbKind;
  /** kinesalite only: keep records in a LevelDB folder instead of memory (a long demo grows ~2.8 KB per 1 KB record in memory). */
  readonly kinesisPath?: string;
  /** Most shards a stream may have. Default 500. */
  readonly shardLimit?: number;
  /** Region the clients claim. Default `us-east-1`. */
  readonly region?: string;
}

/** Endpoint, region and dummy credentials: enough to build more clients (in another process, say). */
export interface LocalAwsConfig {
  /** The region the clients claim (the local servers accept any). */
  readonly region: string;
  /** The servers' URLs, such as `http://127.0.0.1:4567`. */
  readonly endpoints: {
    /** URL of the local Kinesis. */
    readonly kinesis: string;
    /** URL of the local DynamoDB. */
    readonly dynamodb: string;
  };
  /** Dummy credentials: the local servers check none, but the SDK wants some. */
  readonly credentials: {
    /** A fixed placeholder key id. */
    readonly accessKeyId: string;
    /** A fixed placeholder secret. */
    readonly secretAccessKey: string;
  };
}

/** Running local servers with ready clients. */
export interface LocalAws extends LocalAwsConfig {
  /** A Kinesis client for the local Kinesis (HTTP/1.1, as {@link localKinesisClient} builds it). */
  readonly kinesis: KinesisClient;
  /** A DynamoDB client for the local DynamoDB. */
  readonly dynamodb: DynamoDBClient;
  /** Which servers were started (from the options or the environment). */
  readonly kinds: {
    /** The Kinesis server running. */
    readonly kinesis: LocalKinesisKind;
    /** The DynamoDB server running. */
    readonly dynamodb: LocalDynamoDbKind;
  };
  /** Destroys the clients and stops both servers. */
  stop(): Promise<void>;
}

const DUMMY_CREDENTIALS = { accessKeyId: 'AKIDLOCALKINSUMER', secretAccessKey: 'local-secret-not-used' } as const;

/**
 * Starts a local Kinesis and a local DynamoDB on 127.0.0.1 and returns clients for them.
 * By default both run in this process, in memory, on port 0 (kinesalite and dynalite).
 */
export async function startLocalAws(options: LocalAwsOptions = {}): Promise<LocalAws> {
  const kinesisKind: LocalKinesisKind = options.kinesis ?? kindFromEnv<LocalKinesisKind>('KINSUMER_LOCAL_KINESIS', ['kinesalite', 'kinesis-local'], 'kinesalite');
  const dynamoKind: LocalDynamoDbKind = options.dynamodb ?? kindFromEnv<LocalDynamoDbKind>('KINSUMER_LOCAL_DYNAMODB', ['dynalite', 'dynamodb-local'], 'dynalite');
  const region = options.region ?? 'us-east-1';
  const servers: RunningServer[] = [];
  try {
    const kinesisServer = kinesisKind === 'kinesalite'
      ? await startKinesalite({
        ...(options.kinesisPath === undefined ? {} : { path: options.kinesisPath }),
        ...(options.shardLimit === undefined ? {} : { shardLimit: options.shardLimit }),
      })
      : await startKinesisLocal(options.shardLimit === undefined ? {} : { shardLimit: options.shardLimit });
    servers.push(kinesisServer);
    const dynamoServer = dynamoKind === 'dynalite' ? await startDynalite() : await startDynamoDbLocal();
    servers.push(dynamoServer);
    const config: LocalAwsConfig = {
      region,
      endpoints: { kinesis: kinesisServer.endpoint, dynamodb: dynamoServer.endpoint },
      credentials: DUMMY_CREDENTIALS,
    };
    const kinesis = localKinesisClient(config);
    const dynamodb = localDynamoDbClient(config);
    return {
      ...config,
      kinesis,
      dynamodb,
      kinds: { kinesis: kinesisKind, dynamodb: dynamoKind },
      async stop() {
        kinesis.destroy();
        dynamodb.destroy();
        await Promise.all(servers.map((server) => server.stop()));
      },
    };
  } catch (error) {
    await Promise.allSettled(servers.map((server) => server.stop()));
    throw error;
  }
}

/**
 * A Kinesis client for a local server. It speaks HTTP/1.1: kinesalite does not speak HTTP/2,
 * which the v3 client would otherwise use (every call fails, some as uncaught exceptions).
 */
export function localKinesisClient(config: LocalAwsConfig, overrides: { endpoint?: string; maxAttempts?: number } = {}): KinesisClient {
  return new KinesisClient({
    region: config.region,
    endpoint: overrides.endpoint === undefined ? checkedEndpoint(config.endpoints.kinesis, 'endpoints.kinesis') : checkedEndpoint(overrides.endpoint, 'endpoint'),
    credentials: config.credentials,
    requestHandler: new NodeHttpHandler(),
    ...(overrides.maxAttempts === undefined ? {} : { maxAttempts: overrides.maxAttempts }),
  });
}

/** A DynamoDB client for a local server. */
export function localDynamoDbClient(config: LocalAwsConfig, overrides: { endpoint?: string; maxAttempts?: number } = {}): DynamoDBClient {
  return new DynamoDBClient({
    region: config.region,
    endpoint: overrides.endpoint === undefined ? checkedEndpoint(config.endpoints.dynamodb, 'endpoints.dynamodb') : checkedEndpoint(overrides.endpoint, 'endpoint'),
    credentials: config.credentials,
    requestHandler: new NodeHttpHandler(),
    ...(overrides.maxAttempts === undefined ? {} : { maxAttempts: overrides.maxAttempts }),
  });
}

/** `endpoint` when it is a URL a client can call; a `ConfigError` naming `option` when it lacks its scheme. */
function checkedEndpoint(endpoint: string, option: string): string {
  const problem = endpointProblem(endpoint);
  if (problem !== undefined) throw new ConfigError(option, `${endpoint} ${problem}`);
  return endpoint;
}

function kindFromEnv<K extends string>(variable: string, allowed: readonly K[], fallback: K): K {
  const value = process.env[variable];
  if (value === undefined || value === '') return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as K;
  throw new Error(`${variable} must be one of ${allowed.join(', ')} (got ${value})`);
}
