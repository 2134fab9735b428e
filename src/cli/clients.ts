// The CLI is the one place that builds AWS clients itself (the library always takes the
// application's own). Credentials come from the SDK's default chain or --profile.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { endpointProblem } from '../errors/endpoint-error.js';
import { type OptionValues, UsageError } from './command.js';

/** Client settings from the common options. */
export interface ClientSettings {
  readonly region: string | undefined;
  readonly kinesisEndpoint: string | undefined;
  readonly dynamodbEndpoint: string | undefined;
  readonly profile: string | undefined;
}

/** The client settings the common options give; an endpoint without its scheme is a usage error. */
export function clientSettings(values: OptionValues): ClientSettings {
  const text = (name: string) => (typeof values[name] === 'string' ? values[name] : undefined);
  const endpoint = (name: string) => {
    const value = text(name);
    const problem = value === undefined ? undefined : endpointProblem(value);
    if (problem !== undefined) throw new UsageError(`--${name} ${value ?? ''} ${problem}`);
    return value;
  };
  return {
    region: text('region'),
    kinesisEndpoint: endpoint('kinesis-endpoint') ?? endpoint('endpoint'),
    dynamodbEndpoint: endpoint('dynamodb-endpoint') ?? endpoint('endpoint'),
    profile: text('profile'),
  };
}

function common(settings: ClientSettings, endpoint: string | undefined) {
  const local = endpoint !== undefined && /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])/.test(endpoint);
  return {
    ...(settings.region === undefined ? (local ? { region: 'us-east-1' } : {}) : { region: settings.region }),
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(settings.profile === undefined ? {} : { profile: settings.profile }),
    // Local servers accept any signature; without this, a machine with no AWS credentials could not use them.
    ...(local && settings.profile === undefined ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    // HTTP/1.1: local Kinesis servers do not speak HTTP/2.
    requestHandler: new NodeHttpHandler(),
  };
}

export function kinesisClient(settings: ClientSettings): KinesisClient {
  return new KinesisClient(common(settings, settings.kinesisEndpoint));
}

export function dynamodbClient(settings: ClientSettings): DynamoDBClient {
  return new DynamoDBClient(common(settings, settings.dynamodbEndpoint));
}
