// A fault-injecting HTTP proxy on loopback in front of a local Kinesis or DynamoDB server. Per
// operation (from the X-Amz-Target header) it answers with the error bodies AWS sends, adds
// latency or drops the connection, either at seeded random rates or as scripted ("the next 3
// GetRecords"). Everything else is forwarded untouched.
//
// In this process: `const proxy = await startFaultProxy({ target, rules, seed })`.
// As its own process (chaos runs): `npx tsx test/support/fault-proxy.ts --target <url> [--seed n]
// [--rules '<json FaultRule[]>']` prints `{"endpoint":...}` and, on SIGTERM or SIGINT, its counts.
import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse, createServer, request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import { seededRandom } from './seeded-random.js';

/** What the proxy does to one call instead of (or before) forwarding it. */
export type Fault =
  /**
   * Answer with this AWS error (`__type`), e.g. `ProvisionedThroughputExceededException`, `InternalFailure`;
   * `body` adds fields to the JSON body (a TransactionCanceledException's `CancellationReasons`).
   */
  | { readonly kind: 'error'; readonly error: string; readonly status?: number; readonly message?: string; readonly body?: Readonly<Record<string, unknown>> }
  /** Forward after this long. */
  | { readonly kind: 'latency'; readonly ms: number }
  /** Close the connection without an answer (the client sees a reset / socket hang up). */
  | { readonly kind: 'drop' }
  /** Forward the call, then close the connection instead of passing the answer on: it applied, the client cannot know. */
  | { readonly kind: 'lose' };

/** A fault applied to a share of the calls of an operation (`'*'`: any). */
export interface FaultRule {
  readonly operation: string;
  /** Probability in [0, 1]. */
  readonly rate: number;
  readonly fault: Fault;
}

/** Plain options (JSON-serialisable, so another process can pass them on). */
export interface FaultProxyOptions {
  /** The server behind the proxy, e.g. `http://127.0.0.1:4567`. */
  readonly target: string;
  readonly rules?: readonly FaultRule[];
  /** Seed of the random rates. Default 1. */
  readonly seed?: number;
  /** Default 0 (any free port). */
  readonly port?: number;
}

/** What went through the proxy. */
export interface FaultProxyCounts {
  /** Calls per operation, faulted or not. */
  readonly calls: Readonly<Record<string, number>>;
  /** Faults injected per operation. */
  readonly faults: Readonly<Record<string, number>>;
  /** Faults injected per kind: the error name, `latency` or `drop`. */
  readonly byFault: Readonly<Record<string, number>>;
  /** Calls the client gave up on before the answer (aborted requests). */
  readonly aborted: number;
}

/** A running proxy. */
export interface FaultProxy {
  /** Point SDK clients here. */
  readonly endpoint: string;
  /** The next `count` calls of `operation` (`'*'`: any) get `fault`, before any rate rule. */
  script(operation: string, count: number, fault: Fault): void;
  /** Replaces the rate rules. */
  setRules(rules: readonly FaultRule[]): void;
  counts(): FaultProxyCounts;
  /** Every call so far in order: its operation, and whether the SDK's stack made it (it carries `amz-sdk-invocation-id`; kinsumer's lean calls do not). */
  log(): ReadonlyArray<{ readonly operation: string; readonly bySdk: boolean }>;
  stop(): Promise<void>;
}

interface Scripted {
  readonly operation: string;
  remaining: number;
  readonly fault: Fault;
}

const DYNAMODB_PREFIX = 'com.amazonaws.dynamodb.v20120810#';

/** Starts a proxy on 127.0.0.1. */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const target = new URL(options.target);
  const agent = new Agent({ keepAlive: true });
  const random = seededRandom(options.seed ?? 1);
  let rules: readonly FaultRule[] = options.rules ?? [];
  const scripted: Scripted[] = [];
  const calls: Record<string, number> = {};
  const faults: Record<string, number> = {};
  const byFault: Record<string, number> = {};
  const log: Array<{ operation: string; bySdk: boolean }> = [];
  let aborted = 0;
  const sockets = new Set<Socket>();
  const delays = new Set<NodeJS.Timeout>();

  const choose = (operation: string): Fault | undefined => {
    const script = scripted.find((s) => s.operation === operation || s.operation === '*');
    if (script !== undefined) {
      script.remaining -= 1;
      if (script.remaining <= 0) scripted.splice(scripted.indexOf(script), 1);
      return script.fault;
    }
    for (const rule of rules) {
      if ((rule.operation === operation || rule.operation === '*') && random() < rule.rate) return rule.fault;
    }
    return undefined;
  };

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, lose = false): ClientRequest => {
    const upstream = httpRequest({
      host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent,
    }, (answer) => {
      if (lose) {
        answer.resume();
        answer.once('end', () => req.socket.destroy());
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => req.socket.destroy());
    upstream.end(body);
    return upstream;
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let upstream: ClientRequest | undefined;
    let dropped = false;
    res.on('close', () => {
      if (res.writableFinished || dropped) return;
      aborted += 1;
      upstream?.destroy();
    });
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const amzTarget = String(req.headers['x-amz-target'] ?? '');
      const operation = amzTarget.slice(amzTarget.indexOf('.') + 1) || 'unknown';
      calls[operation] = (calls[operation] ?? 0) + 1;
      log.push({ operation, bySdk: req.headers['amz-sdk-invocation-id'] !== undefined });
      const fault = choose(operation);
      if (fault === undefined) {
        upstream = forward(req, res, body);
        return;
      }
      faults[operation] = (faults[operation] ?? 0) + 1;
      const label = fault.kind === 'error' ? fault.error : fault.kind;
      byFault[label] = (byFault[label] ?? 0) + 1;
      if (fault.kind === 'drop') {
        dropped = true;
        req.socket.destroy();
      }
      else if (fault.kind === 'lose') {
        dropped = true;
        upstream = forward(req, res, body, true);
      }
      else if (fault.kind === 'latency') {
        const delay = setTimeout(() => {
          delays.delete(delay);
          if (!res.destroyed) upstream = forward(req, res, body);
        }, fault.ms);
        delays.add(delay);
      }
      else answerError(res, fault, amzTarget.startsWith('DynamoDB'));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fault proxy has no TCP address');

  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    script(operation, count, fault) {
      if (count > 0) scripted.push({ operation, remaining: count, fault });
    },
    setRules(next) {
      rules = next;
    },
    counts: () => ({ calls: { ...calls }, faults: { ...faults }, byFault: { ...byFault }, aborted }),
    log: () => [...log],
    stop: () => new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      for (const delay of delays) clearTimeout(delay);
      for (const socket of sockets) socket.destroy();
      agent.destroy();
    }),
  };
}

/** An error as the service sends it: JSON body with `__type` (DynamoDB's carries its namespace). */
function answerError(res: ServerResponse, fault: Extract<Fault, { kind: 'error' }>, dynamodb: boolean): void {
  const status = fault.status ?? (/InternalFailure|InternalServerError/.test(fault.error) ? 500 : /ServiceUnavailable/.test(fault.error) ? 503 : 400);
  const body = JSON.stringify({
    __type: dynamodb ? `${DYNAMODB_PREFIX}${fault.error}` : fault.error,
    message: fault.message ?? defaultMessage(fault.error),
    ...fault.body,
  });
  res.writeHead(status, {
    'Content-Type': dynamodb ? 'application/x-amz-json-1.0' : 'application/x-amz-json-1.1',
    'Content-Length': Buffer.byteLength(body),
    'x-amzn-RequestId': `fault-proxy-${Date.now()}`,
  });
  res.end(body);
}

function defaultMessage(error: string): string {
  switch (error) {
    case 'ProvisionedThroughputExceededException': return 'Rate exceeded for shard in stream under account.';
    case 'ExpiredIteratorException': return 'Iterator expired. The iterator was created more than 300000 milliseconds ago.';
    case 'LimitExceededException': return 'Rate exceeded for stream under account.';
    case 'ThrottlingException': return 'Rate of requests exceeds the allowed throughput.';
    default: return `${error} (injected by the fault proxy)`;
  }
}

async function main(argv: readonly string[]): Promise<void> {
  const value = (flag: string): string | undefined => {
    const index = argv.indexOf(flag);
    return index < 0 ? undefined : argv[index + 1];
  };
  const target = value('--target');
  if (target === undefined) throw new Error('usage: fault-proxy --target <url> [--seed n] [--port n] [--rules <json>]');
  const seed = value('--seed');
  const port = value('--port');
  const rules = value('--rules');
  const proxy = await startFaultProxy({
    target,
    ...(seed === undefined ? {} : { seed: Number(seed) }),
    ...(port === undefined ? {} : { port: Number(port) }),
    ...(rules === undefined ? {} : { rules: JSON.parse(rules) as FaultRule[] }),
  });
  process.stdout.write(`${JSON.stringify({ endpoint: proxy.endpoint })}\n`);
  const shutdown = (): void => {
    process.stdout.write(`${JSON.stringify(proxy.counts())}\n`);
    void proxy.stop().finally(() => process.exit(0));
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  });
}
