// What the checker's own tests build their hand-made histories from.
import type { ProcessView } from './checker.js';

/** A process as the checker sees it, whose status a test sets. */
export class Proc implements ProcessView {
  state: ReturnType<ProcessView['status']> = 'running';
  constructor(readonly label: string, readonly clientId = label.split('#')[0] ?? label, readonly skewMs = 0) {}
  status(): ReturnType<ProcessView['status']> {
    return this.state;
  }
}

/** The sequence number of the n-th record, 56 digits as Kinesis writes them. */
export const SEQ = (n: number) => `4959${String(n).padStart(52, '0')}`;
