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

interface ErrorShape {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly message?: unknown;
  readonly cause?: unknown;
  readonly address?: unknown;
  readonly port?: unknown;
  readonly hostname?: unknown;
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
    return new EndpointError(service, endpoint, `${server} does not know the operation ${operation ?? ''} (UnknownOperationException)`, { cause: error, retriable: false });
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
