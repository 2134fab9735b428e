// The ledger of a fleet run: each worker appends one JSON line per record it acks, written
// synchronously before the ack, so a SIGKILL can lose an ack but never a line for an ack that
// happened. An independent checker (test/support/tally.ts, with test/support/ack-log.ts to read
// the files) reads the lines afterwards.
import { closeSync, openSync, writeSync } from 'node:fs';

/** One acked record, as a worker logged it. */
export interface AckLine {
  /** Wall-clock ms when the worker received it (emission). */
  readonly e: number;
  /** Wall-clock ms when kinsumer emitted it (earlier than `e` when the handler queues records: `e` is when handling started). Absent in older logs. */
  readonly r?: number;
  /** The worker's own receipt counter: orders receipts within one worker when `e` ties. */
  readonly i: number;
  /** Wall-clock ms when the worker acked it. */
  readonly t: number;
  /** Worker id. */
  readonly w: string;
  readonly shardId: string;
  readonly seq: string;
  readonly sub?: number;
  readonly key: string;
  /** The record's data (the producer's tag `key#n`). */
  readonly data: string;
}

/** Appends ack lines to a file, synchronously (durable across a crash of the process). */
export class AckWriter {
  private readonly fd: number;

  constructor(path: string) {
    this.fd = openSync(path, 'a');
  }

  write(line: AckLine): void {
    writeSync(this.fd, `${JSON.stringify(line)}\n`);
  }

  close(): void {
    closeSync(this.fd);
  }
}
