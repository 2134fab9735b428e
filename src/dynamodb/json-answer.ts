// DynamoDB's JSON on the wire, for the calls kinsumer sends the lean way (connections/lean-call.ts):
// the request body as the SDK writes it, and a successful answer as the SDK would hand it over. The
// one thing JSON does not carry as the SDK's shapes do is binary: an attribute's `B` (and `BS`) is
// base64 on the wire and a Uint8Array in the SDK's items (the metadata table's shard cache is one).

/** The request body: the input as JSON, a Uint8Array as base64 (as the SDK serialises a `B`). */
export function jsonBody(input: object): string {
  return JSON.stringify(input, function binary(this: Record<string, unknown>, key: string, value: unknown) {
    // The value before toJSON (a Buffer's would be { type, data }).
    const original = this[key];
    return original instanceof Uint8Array ? Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64') : value;
  });
}

/**
 * A successful answer's output, as the SDK's deserializer would give it (without `$metadata`);
 * `undefined` when it is not a successful JSON answer (then the SDK is given it).
 */
export function decodeJsonAnswer(answer: { readonly statusCode: number; readonly headers: Record<string, string | undefined>; readonly chunks: readonly Uint8Array[] }): object | undefined {
  if (answer.statusCode !== 200 || !(answer.headers['content-type'] ?? '').includes('json')) return undefined;
  const text = Buffer.concat(answer.chunks).toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  // Most answers hold no binary attribute: the walk is for those that may.
  if (text.includes('"B')) withBinary(json);
  return json;
}

/** Turns every `B` / `BS` of the attribute values under `node` into bytes, in place. */
function withBinary(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) withBinary(item);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const record = node as Record<string, unknown>;
  for (const [key, value] of Object.entries(record)) {
    if (key === 'B' && typeof value === 'string') record.B = bytes(value);
    else if (key === 'BS' && Array.isArray(value) && value.every((v) => typeof v === 'string')) record.BS = value.map((v) => bytes(v));
    else withBinary(value);
  }
}

function bytes(base64: string): Uint8Array {
  const buffer = Buffer.from(base64, 'base64');
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}
