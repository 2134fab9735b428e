// An error as JSON, for log pipelines without an error serializer (JSON.stringify of an event, the
// default logger): its name and message, its typed facts, and its causes — a bounded chain, and
// nothing that could be a credential or a record's payload.

/** Causes kept below the error itself: enough for kinsumer's wrappers around an SDK error around a socket error. */
const MAX_CAUSES = 5;
/** Longer messages are cut (an HTML page quoted by a parser, a long SDK explanation). */
const MAX_MESSAGE = 1000;

/** An error as JSON, as `KinsumerError.toJSON()` writes it: plain data, safe to log. */
export interface ErrorJson {
  /** The error's name (`TableNotFoundError`, an AWS error's name such as `ThrottlingException`). */
  readonly name: string;
  /** Its message, cut at 1000 characters, credentials masked. */
  readonly message: string;
  /** The error's own facts (kinsumer's typed fields; an AWS error's `code` and `httpStatusCode`). */
  readonly [fact: string]: unknown;
}

interface ErrorShape {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly code?: unknown;
  readonly cause?: unknown;
  readonly retriable?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
}

/**
 * `error` (an Error or anything thrown) as plain JSON data: `name`, `message`, the facts below, and
 * `cause`, down to {@link MAX_CAUSES} causes. An error that says whether it is `retriable` (every
 * kinsumer error) contributes its own fields with plain values (strings, numbers, booleans, Dates)
 * — never an object, which could hold a record; any other error only its `code` and its AWS
 * `$metadata.httpStatusCode`. Messages are cut at {@link MAX_MESSAGE} characters, access key ids,
 * session tokens and signatures masked, and what JSON.parse quotes from its input left out.
 */
export function errorJson(error: unknown, depth = 0): ErrorJson | string {
  if (!(error instanceof Error)) {
    return typeof error === 'string' ? clean(error, undefined) : `(a thrown ${error === null ? 'null' : typeof error})`;
  }
  const shape = error as ErrorShape;
  const name = typeof shape.name === 'string' ? shape.name : 'Error';
  const json: Record<string, unknown> = { name, message: clean(typeof shape.message === 'string' ? shape.message : '', name) };
  if (typeof shape.retriable === 'boolean') Object.assign(json, plainFacts(error));
  else {
    if (typeof shape.code === 'string') json.code = shape.code;
    const status = shape.$metadata?.httpStatusCode;
    if (typeof status === 'number') json.httpStatusCode = status;
  }
  if (shape.cause !== undefined) json.cause = depth < MAX_CAUSES ? errorJson(shape.cause, depth + 1) : '(more causes)';
  return json as ErrorJson;
}

// A subclass's typed fields: own enumerable properties (class fields are; `cause` and `stack` are not).
function plainFacts(error: object): Record<string, unknown> {
  const facts: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (key === 'name' || key === 'message') continue;
    const plain = plainValue(value);
    if (plain !== undefined) facts[key] = plain;
  }
  return facts;
}

function plainValue(value: unknown): unknown {
  if (typeof value === 'string') return clean(value, undefined);
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return Number.isFinite(value.getTime()) ? value.toISOString() : undefined;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string' || typeof v === 'number')) return value.map((v) => plainValue(v));
  return undefined;
}

/** A message as it may be logged: masked, without a JSON excerpt, not too long. */
function clean(message: string, name: string | undefined): string {
  let text = message
    .replace(/\b(AKIA|ASIA)[A-Z0-9]{16}\b/g, '$1****************')
    .replace(/(x-amz-security-token\s*[:=]\s*)\S+/gi, '$1****')
    .replace(/(Signature=)[0-9a-f]+/gi, '$1****');
  // JSON.parse quotes its input (`Unexpected token 'x', "{x..." is not valid JSON`): for
  // record.json() that is the record's payload. Only where the input broke is kept.
  if (name === 'SyntaxError' && /JSON/.test(text)) {
    const position = /at position (\d+)/.exec(text)?.[1];
    text = /^Unexpected end of JSON input/.test(text) ? 'Unexpected end of JSON input' : `not valid JSON${position === undefined ? '' : ` (at position ${position})`}`;
  }
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text;
}
