// The logger a client gets when none is given: warnings and errors on stderr, one line each, so a
// first run is not silent when it waits, retries or fails (a start behind a crashed process's
// leases, an unreachable endpoint, a stop that gives up on unacked records). Routine lines (debug,
// info) are dropped: a healthy run prints nothing.
import { errorJson } from '../errors/error-json.js';
import type { Logger } from '../types.js';
import { isMsKey, wholeMs } from './whole-ms.js';

/** Longest JSON tail of a line: the object is context, the message says what happened. */
const MAX_JSON = 2000;

/**
 * A {@link Logger} that writes `warn` and `error` calls as `WARN kinsumer: <message> <object as JSON>`
 * lines (errors as their name, message, typed fields and causes), and drops `debug` and `info`.
 */
export function stderrLogger(write: (line: string) => void = (line) => { process.stderr.write(line); }): Logger {
  const line = (level: string) => (obj: object, msg?: string) => {
    const json = asJson(obj);
    write(`${level} ${msg ?? ''}${json === '{}' ? '' : ` ${json}`}\n`);
  };
  return { debug() {}, info() {}, warn: line('WARN'), error: line('ERROR') };
}

function asJson(obj: object): string {
  let json: string;
  try {
    json = JSON.stringify(obj, (key, value: unknown) => {
      if (typeof value === 'bigint') return value.toString();
      if (typeof value === 'number' && isMsKey(key)) return wholeMs(value);
      // A KinsumerError was already turned into data by its toJSON; any other error is, here.
      if (value instanceof Error) return errorJson(value);
      return value;
    }) ?? '';
  } catch {
    return '';
  }
  return json.length > MAX_JSON ? `${json.slice(0, MAX_JSON)}…` : json;
}
