// The faults of a chaos run: a share of every AWS operation (5 % by default) is answered by the
// fault proxy with an error AWS really sends, a dropped connection or added latency.
import type { Fault, FaultRule } from '../support/fault-proxy.js';

/** A fault and its share of the faulted calls. */
export interface FaultMix {
  readonly fault: Fault;
  readonly share: number;
}

/** Kinesis: read throttling, 500 and 503 answers, resets, slow answers. */
export const KINESIS_FAULTS: readonly FaultMix[] = [
  { fault: { kind: 'error', error: 'ProvisionedThroughputExceededException' }, share: 0.3 },
  { fault: { kind: 'error', error: 'InternalFailure' }, share: 0.2 },
  { fault: { kind: 'error', error: 'ServiceUnavailable' }, share: 0.1 },
  { fault: { kind: 'drop' }, share: 0.2 },
  { fault: { kind: 'latency', ms: 300 }, share: 0.2 },
];

/** DynamoDB: both throttling errors, 500 answers, resets, slow answers. */
export const DYNAMODB_FAULTS: readonly FaultMix[] = [
  { fault: { kind: 'error', error: 'ProvisionedThroughputExceededException' }, share: 0.2 },
  { fault: { kind: 'error', error: 'ThrottlingException' }, share: 0.1 },
  { fault: { kind: 'error', error: 'InternalServerError' }, share: 0.3 },
  { fault: { kind: 'drop' }, share: 0.2 },
  { fault: { kind: 'latency', ms: 300 }, share: 0.2 },
];

/**
 * Rate rules for the fault proxy such that a call is faulted with probability `rate` in all, split
 * by the mix's shares. The proxy tries its rules in order, each with its own draw, so each rule's
 * rate is conditional on the rules before it having passed: share·rate / (1 − rate·shares so far).
 */
export function faultRules(rate: number, mix: readonly FaultMix[]): FaultRule[] {
  if (!(rate >= 0 && rate <= 1)) throw new RangeError('rate must be within [0, 1]');
  const total = mix.reduce((sum, m) => sum + m.share, 0);
  let taken = 0;
  return mix.map(({ fault, share }) => {
    const absolute = (rate * share) / total;
    const conditional = taken >= 1 ? 0 : absolute / (1 - taken);
    taken += absolute;
    return { operation: '*', rate: Math.min(1, conditional), fault };
  });
}

/** The probability that some rule fires, given rules tried in order (for checking `faultRules`). */
export function combinedRate(rules: readonly FaultRule[]): number {
  return 1 - rules.reduce((pass, rule) => pass * (1 - rule.rate), 1);
}
