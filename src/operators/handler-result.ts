// What a handler of the processing operators returned, checked before anything of it is applied:
// the types say `void | RecordResult` (`void | BatchResult`), but a JavaScript caller, an `any`, or
// an unknown key beside `writes` in an inferred result gets past them — and a typo such as
// `{ write: [...] }` would be acked as "nothing to write", its effect silently lost.
import { didYouMean } from '../errors/did-you-mean.js';
import { type HandlerOperator, HandlerResultError } from '../errors/handler-result-error.js';
import type { BatchResult, RecordResult } from './process-types.js';

/** The keys each operator's result may have; the first names what a result is, in messages. */
const RESULT_KEYS: Readonly<Record<HandlerOperator, readonly string[]>> = {
  processRecords: ['writes'],
  processBatches: ['failed', 'writes'],
};

/** `result` as a record handler's result; throws a `HandlerResultError` when it is not one. */
export function recordResultOf(result: unknown): RecordResult | undefined {
  return checkedResult('processRecords', result);
}

/** `result` as a batch handler's result; throws a `HandlerResultError` when it is not one. */
export function batchResultOf(result: unknown): BatchResult | undefined {
  return checkedResult('processBatches', result);
}

function checkedResult(operator: HandlerOperator, result: unknown): Record<string, unknown> | undefined {
  if (result === undefined) return undefined;
  const keys = RESULT_KEYS[operator];
  if (!isPlainObject(result)) throw new HandlerResultError(operator, undefined, `${kindOf(result)}, not nothing or { ${keys.join(', ')} }`);
  for (const key of Object.keys(result)) {
    if (!keys.includes(key)) throw new HandlerResultError(operator, key, `an object with the key '${key}'${didYouMean(key, keys)}, not one of { ${keys.join(', ')} }`);
  }
  for (const key of keys) {
    const value = result[key];
    if (value === undefined) continue;
    if (!Array.isArray(value)) throw new HandlerResultError(operator, key, `${key} that is not an array (${kindOf(value)})`);
    if (key !== 'writes') continue;
    const index = value.findIndex((write) => !isPlainObject(write));
    if (index >= 0) throw new HandlerResultError(operator, key, `writes[${index}] that is not an object (${kindOf(value[index])})`);
  }
  return result;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** `a string`, `an array`, `null`, `a Date`: what a value is, never what it holds (it may be a record's data). */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== '' && name !== 'Object' ? `a ${name}` : 'an object';
  }
  return /^[aeiou]/.test(typeof value) ? `an ${typeof value}` : `a ${typeof value}`;
}
