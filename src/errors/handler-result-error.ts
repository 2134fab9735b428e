// A handler of the processing operators returned what its result type does not allow: a typo such
// as `{ write: [...] }` would otherwise be acked as "nothing to write" and its effect lost.
import { KinsumerError } from './kinsumer-errors.js';

/** The operator whose handler returned the result. */
export type HandlerOperator = 'processRecords' | 'processBatches';

/**
 * A `processRecords` or `processBatches` handler returned something that is not its result: an
 * object with a key the result does not have (`write` for `writes`), `writes` or `failed` that is
 * not an array, or a value that is neither nothing nor an object. Nothing of that result was
 * applied. It fails the record (or the batch's records) and is never retried (`retriable: false`):
 * they go to `onFailure` at once; without it, the operator's output errors with it.
 */
export class HandlerResultError extends KinsumerError {
  /** The operator whose handler returned it. */
  readonly operator: HandlerOperator;
  /** The offending key (`write`, `writes`, `failed`, ...), or `undefined` when the result is not an object. */
  readonly key: string | undefined;

  constructor(operator: HandlerOperator, key: string | undefined, problem: string) {
    super(`the ${operator} handler returned ${problem}: nothing of it was applied`, { retriable: false });
    this.operator = operator;
    this.key = key;
  }
}
