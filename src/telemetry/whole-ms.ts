// Milliseconds as a person reads them in a log line: the monotonic clock's readings are fractions
// (`59509.943359375 ms`, newcomer trial 4), which say nothing more and read as noise.

/** `value` rounded to a whole millisecond. */
export function wholeMs(value: number): number {
  return Math.round(value);
}

/** A key whose value is a duration in milliseconds, by the library's naming rule (`leaseTtlMs`, `boundMs`). */
export function isMsKey(key: string): boolean {
  return /Ms$/.test(key);
}
