import { type MonoTypeOperatorFunction, catchError, defer } from 'rxjs';
import { type AwsService, EndpointError, KinsumerError } from './kinsumer-errors.js';

// The class lives with the other errors (a StartTimeoutError names the EndpointError in its causes).
export { type AwsService, EndpointError } from './kinsumer-errors.js';

/** What the call was, for the message. */
export interface EndpointContext {
  readonly service: AwsService;
  /** The endpoint the client was configured with; `undefined` for AWS's own (resolved per region). */
  readonly endpoint: string | undefined;
  /** The API operation, such as `DescribeStreamConsumer`, where the caller knows it. */
  readonly operation?: string;
}

/** Connection failures that mean "nothing to talk to here", in words. */
const UNREACHABLE: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused (is the server running, and is this its port?)',
  ENOTFOUND: 'host not found (is the host name right?)',
  EAI_AGAIN: 'the host name could not be looked up (is DNS reachable?)',
};

/** The enhanced fan-out operations: a server that does not know them has no fan-out at all. */
const FAN_OUT_OPERATIONS = new Set(['DescribeStreamConsumer', 'RegisterStreamConsumer', 'DeregisterStreamConsumer', 'SubscribeToShard']);

/** DynamoDB's transactions: dynalite has none, and records' writes (`ack({ writes })`) are one. */
const TRANSACTION_OPERATIONS = new Set(['TransactWriteItems', 'TransactGetItems']);

/**
 * What kinesalite answers a call that names the stream by `StreamARN` (it predates it): ListShards
 * says this, the other calls fail validation on the missing `StreamName`. Kinsumer always sends
 * one of the two, so either means the server did not take the ARN.
 */
const NO_STREAM_ARN = /Either NextToken or StreamName should be provided|Value null at 'streamName'/;

/**
 * Why `endpoint` is not an endpoint a client can call: it lacks its `http://` or `https://` (the
 * SDK then reads `localhost:8000` as a URL of scheme `localhost:`, and fails later on something
 * else, such as the region); `undefined` when it is fine. The CLI and the testing kit check their
 * endpoints with it; a client already built with one is explained at its first call.
 */
export function endpointProblem(endpoint: string): string | undefined {
  if (/^https?:\/\/[^/]/i.test(endpoint)) return undefined;
  const bare = endpoint.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  return bare === endpoint
    ? `has no scheme: write it as http://${endpoint} (or https://)`
    : `is not an http:// or https:// URL: write it as http://${bare} (or https://)`;
}

interface ErrorShape {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly message?: unknown;
  readonly cause?: unknown;
  readonly address?: unknown;
  readonly port?: unknown;
  readonly hostname?: unknown;
  readonly input?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
}

/** The error and its causes (the SDK's HTTP/2 handler wraps the socket's error), outermost first. */
function chain(error: unknown): ErrorShape[] {
  const shapes: ErrorShape[] = [];
  for (let e: unknown = error; typeof e === 'object' && e !== null && shapes.length < 5; e = (e as ErrorShape).cause) shapes.push(e);
  return shapes;
}

/** Where a failed connection went, from the socket error itself (AWS endpoints are not configured). */
function socketAddress(shape: ErrorShape): string | undefined {
  if (typeof shape.address === 'string') return typeof shape.port === 'number' ? `${shape.address}:${shape.port}` : shape.address;
  return typeof shape.hostname === 'string' ? shape.hostname : undefined;
}

/**
 * An error of a call to `context.service` as an {@link EndpointError} when it says something about
 * the endpoint — nothing listens there, it does not speak HTTP/2, it answers something that is not
 * AWS JSON, it does not know the operation — and `undefined` for every other error (left as it is).
 */
export function explainEndpointError(error: unknown, context: EndpointContext): EndpointError | undefined {
  if (error instanceof KinsumerError) return undefined;
  const { service, endpoint, operation } = context;
  const shapes = chain(error);
  const [outer] = shapes;
  if (outer === undefined) return undefined;

  // The endpoint as given is the first thing wrong: what the SDK says then is a consequence of it.
  const badUrl = shapes.find((shape) => shape.code === 'ERR_INVALID_URL' && typeof shape.input === 'string');
  const given = endpoint ?? (typeof badUrl?.input === 'string' ? badUrl.input : undefined);
  const malformed = given === undefined ? undefined : endpointProblem(given);
  if (given !== undefined && malformed !== undefined) {
    return new EndpointError(service, given, `the ${service} endpoint ${given} ${malformed}`, { cause: error, retriable: false });
  }
  const setup = clientSetupProblem(service, outer);
  if (setup !== undefined) return new EndpointError(service, endpoint, setup, { cause: error, retriable: false });

  const unreachable = shapes.find((shape) => typeof shape.code === 'string' && shape.code in UNREACHABLE);
  if (unreachable !== undefined) {
    const where = endpoint ?? socketAddress(unreachable);
    const problem = UNREACHABLE[String(unreachable.code)] ?? '';
    return new EndpointError(service, where, `cannot reach ${service} at ${where ?? 'its endpoint'}: ${problem}`, { cause: error, retriable: true });
  }
  // nghttp2's "Protocol error": the server answered HTTP/2's preface with HTTP/1.1.
  if (outer.code === 'ERR_HTTP2_ERROR') {
    const client = service === 'Kinesis' ? 'KinesisClient' : 'DynamoDBClient';
    const local = service === 'Kinesis' ? 'localKinesisClient()' : 'localDynamoDbClient()';
    return new EndpointError(service, endpoint, `the ${service} endpoint ${endpoint ?? ''} does not speak HTTP/2, which a ${client} uses by default. `
      + 'Local servers such as kinesalite speak HTTP/1.1: give the client `requestHandler: new NodeHttpHandler()` '
      + `(from @smithy/node-http-handler), or build it with ${local} from kinsumer/testing`, { cause: error, retriable: false });
  }
  const status = outer.$metadata?.httpStatusCode;
  const message = typeof outer.message === 'string' ? outer.message : '';
  // The SDK's JSON parser failed on the body: another kind of server answered.
  if (outer.name === 'SyntaxError' && typeof status === 'number') {
    const markup = /Unexpected token '<'/.test(message) ? 'HTML or XML' : 'a body';
    return new EndpointError(service, endpoint, `the ${service} endpoint ${endpoint ?? ''} answered HTTP ${status} with ${markup}, not the JSON ${service} sends: `
      + 'is it the right URL (and the right service on it)?', { cause: error, retriable: false });
  }
  if (outer.name === 'UnknownOperationException') {
    const server = `the ${service} server at ${endpoint ?? 'its endpoint'}`;
    if (operation !== undefined && FAN_OUT_OPERATIONS.has(operation)) {
      return new EndpointError(service, endpoint, `${server} has no enhanced fan-out (${operation} is not an operation it knows; kinesalite has none, kinesis-local and AWS do)`, { cause: error, retriable: false });
    }
    const what = operation === undefined ? 'the operation called' : `the operation ${operation}`;
    const dynalite = service === 'DynamoDB' && operation !== undefined && TRANSACTION_OPERATIONS.has(operation)
      ? ": dynalite has no transactions, which records' writes (ack({ writes })) need: use DynamoDB Local (startLocalAws({ dynamodb: 'dynamodb-local' }) from kinsumer/testing) or DynamoDB"
      : '';
    return new EndpointError(service, endpoint, `${server} does not know ${what} (UnknownOperationException)${dynalite}`, { cause: error, retriable: false });
  }
  if (service === 'Kinesis' && (outer.name === 'InvalidArgumentException' || outer.name === 'ValidationException') && NO_STREAM_ARN.test(message)) {
    return new EndpointError(service, endpoint, `the Kinesis server at ${endpoint ?? 'its endpoint'} does not take a stream's ARN (StreamARN), as kinesalite does not: `
      + 'name the stream instead (streamName, or --stream <name> in the CLI)', { cause: error, retriable: false });
  }
  return undefined;
}

/**
 * What the client itself lacks before it can call anything: a region (the SDK's `Region is
 * missing`), or credentials (`CredentialsProviderError`). Said in the words of both the library
 * and the CLI, which build their clients differently.
 */
function clientSetupProblem(service: AwsService, outer: ErrorShape): string | undefined {
  const message = typeof outer.message === 'string' ? outer.message : '';
  if (/^Region is missing$/.test(message)) {
    return `the ${service} client has no region: give the client one ({ region: 'eu-west-1' }), set AWS_REGION, or pass --region to the CLI`;
  }
  if (outer.name === 'CredentialsProviderError') {
    return `the ${service} client found no AWS credentials (${message}): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (--profile in the CLI), `
      + 'or give the client credentials; local servers accept any (localKinesisClient() and localDynamoDbClient() of kinsumer/testing set some)';
  }
  return undefined;
}

/** Both SDK v3 clients: their resolved config has the endpoint provider when one was configured. */
interface ConfiguredClient {
  readonly config: { readonly endpoint?: unknown };
}

/** The endpoint a client was configured with, as a URL; `undefined` for AWS's own endpoints. */
async function configuredEndpoint(client: ConfiguredClient): Promise<string | undefined> {
  const provider = client.config.endpoint;
  if (typeof provider !== 'function') return undefined;
  try {
    const { protocol, hostname, port, path } = await (provider as () => Promise<{ protocol: string; hostname: string; port?: number; path?: string }>)();
    // `localhost:8000` parses as scheme `localhost:` and path `8000`: shown as it was given.
    if (hostname === '' && !/^https?:$/.test(protocol)) return `${protocol}${path ?? ''}`;
    return `${protocol}//${hostname}${port === undefined ? '' : `:${port}`}${path === undefined || path === '/' ? '' : path}`;
  } catch {
    return undefined;
  }
}

/** Replaces an error that {@link explainEndpointError} can explain; lets every other error through as it is. */
export function explainErrors<T>(service: AwsService, client: ConfiguredClient, operation?: string): MonoTypeOperatorFunction<T> {
  return catchError((error: unknown) => defer(async (): Promise<never> => {
    const endpoint = await configuredEndpoint(client);
    throw explainEndpointError(error, { service, endpoint, ...(operation === undefined ? {} : { operation }) }) ?? error;
  }));
}
