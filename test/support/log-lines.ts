// A logger that keeps what it is given, for tests that assert what kinsumer logs and at which level.
import type { Logger } from '../../src/types.js';

/** One call of a {@link capturingLogger}. */
export interface LogLine {
  readonly level: keyof Logger;
  readonly obj: object;
  readonly msg: string | undefined;
}

/** A logger that appends every call, at every level, to `lines`. */
export function capturingLogger(lines: LogLine[]): Logger {
  const at = (level: keyof Logger) => (obj: object, msg?: string) => { lines.push({ level, obj, msg }); };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A {@link LogLine} with the (virtual) time it was logged at. */
export interface TimedLogLine extends LogLine {
  readonly atMs: number;
}

/** A logger that appends every call, at every level, to `lines`, with `now()` at the call. */
export function timedLogger(lines: TimedLogLine[], now: () => number): Logger {
  const at = (level: keyof Logger) => (obj: object, msg?: string) => { lines.push({ level, obj, msg, atMs: now() }); };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
