import { expect } from 'chai';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AckLine } from '../../../examples/demo/ack-log.js';
import { AckTail } from '../../../examples/demo/ack-tail.js';

function line(w: string, n: number): AckLine {
  return { e: n, i: n, t: n, w, shardId: 'shardId-000000000000', seq: String(n), key: 'k', data: `k#${n}` };
}

const json = (l: AckLine) => `${JSON.stringify(l)}\n`;

describe('demo ack tail (following the ack logs)', () => {
  let folder: string;
  beforeEach(() => { folder = mkdtempSync(join(tmpdir(), 'kinsumer-ack-tail-')); });
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  it('returns only what was appended since the last poll, across files, and keeps everything in lines', () => {
    const tail = new AckTail(folder);
    expect(tail.poll()).to.deep.equal([]);
    writeFileSync(join(folder, 'w1.acks.jsonl'), json(line('w1', 1)) + json(line('w1', 2)));
    writeFileSync(join(folder, 'ignored.txt'), 'not an ack log\n');
    expect(tail.poll().map((l) => l.data)).to.deep.equal(['k#1', 'k#2']);
    appendFileSync(join(folder, 'w1.acks.jsonl'), json(line('w1', 3)));
    writeFileSync(join(folder, 'w2.acks.jsonl'), json(line('w2', 4)));
    expect(tail.poll().map((l) => l.data)).to.deep.equal(['k#3', 'k#4']);
    expect(tail.poll()).to.deep.equal([]);
    expect(tail.lines).to.have.length(4);
  });

  it('holds back a line until its newline is written (a write in progress, or torn by a SIGKILL)', () => {
    const tail = new AckTail(folder);
    const path = join(folder, 'w1.acks.jsonl');
    const whole = json(line('w1', 1));
    writeFileSync(path, whole.slice(0, 20));
    expect(tail.poll()).to.deep.equal([]);
    appendFileSync(path, whole.slice(20));
    expect(tail.poll().map((l) => l.data)).to.deep.equal(['k#1']);
  });

  it('skips a line that is not JSON instead of failing', () => {
    writeFileSync(join(folder, 'w1.acks.jsonl'), `{"torn\n${json(line('w1', 2))}`);
    expect(new AckTail(folder).poll().map((l) => l.data)).to.deep.equal(['k#2']);
  });
});
