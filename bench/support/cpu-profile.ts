// Summarises a V8 .cpuprofile (from `node --cpu-prof`, or the inspector as bench/cpu.ts takes
// them): self time by function and by source (kinsumer's own modules, RxJS, the AWS SDK, Node,
// GC), and "where the time goes" by category, where the decoding of GetRecords answers counts
// everything under it (JSON.parse, base64, Dates), whoever's code that is.
//
//   npx tsx bench/support/cpu-profile.ts <file.cpuprofile> [top]
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

/** A V8 CPU profile, as `--cpu-prof` or `Profiler.stop` gives it. */
export interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Where the busy time goes, in percent of the busy (not idle) samples. */
export interface ProfileCategories {
  /** The AWS SDK's own GetRecords response deserializer, everything under it (JSON.parse, base64, Dates). */
  readonly sdkDeserializer: number;
  /** kinsumer's lean GetRecords decoder (src/kinesis/get-records.ts), everything under it. */
  readonly leanDecoder: number;
  /** The raw loop's page decoding (bench/support/raw-get-records.ts: text, JSON.parse, the loop over the records), everything under it. */
  readonly rawDecoder: number;
  /** Every record's payload from base64 to bytes (kinsumer's decodeBase64, the raw loop's Buffer.from), everything under it. */
  readonly payloadDecoding: number;
  readonly garbageCollector: number;
  /** Self time in kinsumer's modules outside the decoder. */
  readonly kinsumer: number;
  readonly rxjs: number;
  /** Self time in the rest of the SDK: signing, retries, middleware, the HTTP handler. */
  readonly sdkRequest: number;
  /** Node's own JavaScript and V8 built-ins outside the decoders: HTTP, sockets, streams, timers. */
  readonly node: number;
  /** The benchmark's consumer code, the DynamoDB client's, and the rest. */
  readonly other: number;
  /** Busy time sampled, milliseconds. */
  readonly busyMs: number;
}

function source(url: string, name: string): string {
  if (name === '(garbage collector)') return 'GC';
  if (name === '(idle)' || name === '(program)') return name;
  if (url.includes('/src/')) return `kinsumer ${url.slice(url.indexOf('/src/') + 1)}`;
  if (url.includes('/bench/')) return `bench ${url.slice(url.indexOf('/bench/') + 1)}`;
  if (url.includes('node_modules/rxjs')) return 'rxjs';
  if (url.includes('node_modules/')) {
    const after = url.split('node_modules/').at(-1) ?? '';
    const parts = after.split('/');
    return `node_modules ${parts[0]?.startsWith('@') === true ? `${parts[0]}/${parts[1] ?? ''}` : parts[0] ?? ''}`;
  }
  if (url.startsWith('node:') || url === '') return 'node / V8 built-ins';
  return url;
}

const SDK = /node_modules\/@(aws-sdk|smithy)\//;
// The SDK's deserialization of a response: the schema-based deserializer (new clients) or the
// generated de_* functions (older ones), whatever they call.
const SDK_DESERIALIZER = /^(schemaDeserializationMiddleware|deserializerMiddleware|deserializeResponse|de_\w+|parseJsonBody|collectBody)$/;
// The raw loop's decoding of a page (bench/support/raw-get-records.ts), and a payload's decoding in either.
const RAW_DECODER = /^(getRecords|#text|decodePage)$/;
const PAYLOAD_DECODER = /^(decodeBase64|payloadBytes)$/;

/** Busy time by category; see {@link ProfileCategories}. */
export function categorize(profile: Profile): ProfileCategories {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  type Under = 'sdk' | 'lean' | 'raw' | 'payload' | 'profiler' | 'none';
  const underCache = new Map<number, Under>();
  // The nearest of the frames above that names a category: a payload decoded inside the raw loop's page decoding is payload decoding.
  const under = (id: number): Under => {
    const known = underCache.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id);
    let result: Under = 'none';
    if (node !== undefined) {
      const { url, functionName } = node.callFrame;
      // Profiler.start, as the inspector session posts it: the profiler starting, not the consumer.
      if (url === 'node:inspector' && functionName === 'post') result = 'profiler';
      else if (PAYLOAD_DECODER.test(functionName) && (url.includes('/src/') || url.includes('/bench/'))) result = 'payload';
      else if (url.includes('/src/kinesis/get-records')) result = 'lean';
      else if (url.includes('/bench/support/raw-get-records') && RAW_DECODER.test(functionName)) result = 'raw';
      else if (SDK.test(url) && SDK_DESERIALIZER.test(functionName)) result = 'sdk';
      else {
        const up = parent.get(id);
        result = up === undefined ? 'none' : under(up);
      }
    }
    underCache.set(id, result);
    return result;
  };
  const micros = { sdkDeserializer: 0, leanDecoder: 0, rawDecoder: 0, payloadDecoding: 0, garbageCollector: 0, kinsumer: 0, rxjs: 0, sdkRequest: 0, node: 0, other: 0 };
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    const node = byId.get(id);
    if (node === undefined) return;
    const { url, functionName } = node.callFrame;
    if (functionName === '(idle)' || under(id) === 'profiler') return;
    if (functionName === '(garbage collector)') micros.garbageCollector += delta;
    else if (under(id) === 'sdk') micros.sdkDeserializer += delta;
    else if (under(id) === 'lean') micros.leanDecoder += delta;
    else if (under(id) === 'raw') micros.rawDecoder += delta;
    else if (under(id) === 'payload') micros.payloadDecoding += delta;
    else if (url.includes('/src/')) micros.kinsumer += delta;
    else if (url.includes('node_modules/rxjs')) micros.rxjs += delta;
    else if (SDK.test(url)) micros.sdkRequest += delta;
    else if (url.startsWith('node:') || url === '') micros.node += delta;
    else micros.other += delta;
  });
  const busy = Object.values(micros).reduce((a, b) => a + b, 0);
  const percent = (value: number): number => (busy === 0 ? 0 : Math.round((1000 * value) / busy) / 10);
  return {
    sdkDeserializer: percent(micros.sdkDeserializer),
    leanDecoder: percent(micros.leanDecoder),
    rawDecoder: percent(micros.rawDecoder),
    payloadDecoding: percent(micros.payloadDecoding),
    garbageCollector: percent(micros.garbageCollector),
    kinsumer: percent(micros.kinsumer),
    rxjs: percent(micros.rxjs),
    sdkRequest: percent(micros.sdkRequest),
    node: percent(micros.node),
    other: percent(micros.other),
    busyMs: Math.round(busy / 1000),
  };
}

/**
 * Busy time by what it does (issue 26's buckets for the limit baseline), in milliseconds: each
 * sample goes to the nearest frame on its stack that names a job, so JSON.parse inside the page
 * decoding is JSON, a Buffer built for a payload is base64. DynamoDB and Kinesis calls share
 * `httpSdk` (their counts are in the figure's details).
 */
export interface LimitBuckets {
  /** The SDK's middleware (signing, retries, endpoint, its deserializer) and Node's HTTP, sockets, streams, timers. */
  readonly httpSdk: number;
  /** The page's body made text (isAscii, Latin-1 copy, joined chunks) and JSON.parse, with the loop over its records. */
  readonly jsonParse: number;
  /** Every payload from base64 to bytes. */
  readonly base64: number;
  /** The per-record objects: WireRecord, StreamRecord, the unpacking of a page. */
  readonly recordObjects: number;
  /** RxJS and kinsumer's emission path (delivery loop, operators, multicast). */
  readonly rxjs: number;
  /** The checkpoint side: track/ack, the watermark, checkpoint writes, leases. */
  readonly checkpoint: number;
  readonly garbageCollector: number;
  /** The bench's own consumer code, and the rest. */
  readonly other: number;
}

type Bucket = keyof LimitBuckets;

/** The job a frame names, if it names one (see {@link LimitBuckets}). */
function bucketOf(url: string, functionName: string): Bucket | undefined {
  if (functionName === '(garbage collector)') return 'garbageCollector';
  if (functionName === '(program)' || url.includes('/bench/support/cpu-consumer')) return 'other';
  if (/^(decodeBase64|payloadBytes|get data)$/.test(functionName) && !url.includes('node_modules')) return 'base64';
  if (url.includes('/src/kinesis/get-records') || url.includes('/bench/support/raw-get-records')) {
    if (/^(wireRecord|WireRecord)$/.test(functionName)) return 'recordObjects';
    if (/^(decodeGetRecords|text|#text|joined|decodePage|childShardIds)$/.test(functionName)) return 'jsonParse';
    return 'httpSdk';
  }
  if (/\/src\/kinesis\/wire-record|\/src\/reading\/(unpack-page|delivered-record|kpl)/.test(url)) return /^(track|ack)$/.test(functionName) ? 'checkpoint' : 'recordObjects';
  if (/\/src\/(checkpoint|lease|dynamodb)\//.test(url)) return 'checkpoint';
  if (url.includes('node_modules/rxjs') || /\/src\/(reading|operators|group)\//.test(url) || url.endsWith('/src/kinsumer.ts')) return 'rxjs';
  if (SDK.test(url) || /\/src\/kinesis\//.test(url)) return 'httpSdk';
  return undefined;
}

/** Busy milliseconds by {@link LimitBuckets} (idle and the profiler's own start left out). */
export function limitBuckets(profile: Profile): LimitBuckets {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const cache = new Map<number, Bucket | 'skip'>();
  const of = (id: number): Bucket | 'skip' => {
    const known = cache.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id);
    let result: Bucket | 'skip' = 'other';
    if (node !== undefined) {
      const { url, functionName } = node.callFrame;
      const up = parent.get(id);
      if (functionName === '(idle)' || (url === 'node:inspector' && functionName === 'post')) result = 'skip';
      else {
        // A stack no frame of which names a job: Node's own work (HTTP, sockets, timers).
        const named = bucketOf(url, functionName);
        result = named ?? (up === undefined ? 'httpSdk' : of(up));
      }
    }
    cache.set(id, result);
    return result;
  };
  const micros: Record<Bucket, number> = { httpSdk: 0, jsonParse: 0, base64: 0, recordObjects: 0, rxjs: 0, checkpoint: 0, garbageCollector: 0, other: 0 };
  profile.samples.forEach((id, i) => {
    const bucket = of(id);
    if (bucket !== 'skip') micros[bucket] += profile.timeDeltas[i] ?? 0;
  });
  return Object.fromEntries(Object.entries(micros).map(([key, value]) => [key, Math.round(value / 100) / 10])) as unknown as LimitBuckets;
}

/** Self time by source and by function, as text. */
export function selfTimeReport(profile: Profile, top = 20): string {
  const selfMicros = new Map<number, number>();
  profile.samples.forEach((id, i) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...selfMicros.values()].reduce((a, b) => a + b, 0);
  const byFunction = new Map<string, number>();
  const bySource = new Map<string, number>();
  for (const node of profile.nodes) {
    const micros = selfMicros.get(node.id) ?? 0;
    const { functionName, url } = node.callFrame;
    const name = functionName === '' ? '(anonymous)' : functionName;
    const where = source(url, name);
    byFunction.set(`${name}  [${where}]`, (byFunction.get(`${name}  [${where}]`) ?? 0) + micros);
    bySource.set(where, (bySource.get(where) ?? 0) + micros);
  }
  const show = (map: Map<string, number>, count: number): string => [...map].sort((a, b) => b[1] - a[1]).slice(0, count)
    .map(([key, value]) => `${((100 * value) / total).toFixed(1).padStart(5)} %  ${key}`).join('\n');
  return `self time by source (${(total / 1e6).toFixed(1)} s sampled)\n${show(bySource, 14)}\n\nself time by function\n${show(byFunction, top)}`;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, topArg] = process.argv.slice(2);
  if (file === undefined) throw new Error('usage: cpu-profile.ts <file.cpuprofile> [top]');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  console.log(selfTimeReport(profile, Number(topArg ?? 20)));
  console.log(`\nbusy time by category (%)\n${JSON.stringify(categorize(profile), null, 2)}`);
  console.log(`\nbusy time by job (ms)\n${JSON.stringify(limitBuckets(profile), null, 2)}`);
}
