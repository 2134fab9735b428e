import { expect } from 'chai';
import { type Observable, VirtualTimeScheduler, firstValueFrom } from 'rxjs';
import { classifyAwsError } from '../../../src/errors/aws-error-kind.js';
import type { IteratorStart, ShardEvent, ShardEventPull } from '../../../src/ports/stream.js';
import { MemoryFanOut } from '../../../src/testing/memory-fan-out.js';
import { MemoryStream } from '../../../src/testing/memory-stream.js';
import { advance } from '../../support/virtual-time.js';

// The in-memory enhanced fan-out, on virtual time: what the simulator's fan-out groups read through.
const text = (event: ShardEvent | undefined) => (event?.records ?? []).map((r) => Buffer.from(r.data).toString('utf8'));

describe('MemoryFanOut', () => {
  let scheduler: VirtualTimeScheduler;
  let stream: MemoryStream;
  let fanOut: MemoryFanOut;
  let arn: string;
  const shard = 'shardId-000000000000';

  beforeEach(async () => {
    scheduler = new VirtualTimeScheduler();
    stream = new MemoryStream({ clock: () => scheduler.now() });
    fanOut = new MemoryFanOut(stream, { scheduler });
    arn = (await firstValueFrom(fanOut.registerConsumer('app'))).consumerArn;
  });

  /** Subscribes and keeps the subscription open; its pull handle, or the error. */
  const subscribe = (start: IteratorStart): { handle: () => ShardEventPull; error: () => unknown } => {
    let handle: ShardEventPull | undefined;
    let error: unknown;
    fanOut.subscribeToShard(arn, shard, start).subscribe({ next: (h) => { handle = h; }, error: (e: unknown) => { error = e; } });
    return { handle: () => handle as ShardEventPull, error: () => error };
  };

  /** Pulls one event, running virtual time until it comes (at most `ms`). */
  const pull = (source: Observable<ShardEvent | undefined>, ms = 10_000): { event: ShardEvent | undefined; done: boolean; error: unknown } => {
    const result: { event: ShardEvent | undefined; done: boolean; error: unknown } = { event: undefined, done: false, error: undefined };
    source.subscribe({ next: (e) => { result.event = e; result.done = true; }, error: (e: unknown) => { result.error = e; result.done = true; } });
    for (let waited = 0; !result.done && waited < ms; waited += 100) advance(scheduler, 100);
    return result;
  };

  /** 5 s later (a new subscribe is allowed), one record `data` is put; what a subscription AFTER `continuation` gets first. */
  const resumeAfter = (continuation: string | undefined, data: string): string[] => {
    advance(scheduler, 5000);
    stream.putRecord('k', data);
    const again = subscribe({ type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: continuation ?? '' });
    return text(pull(again.handle().next()).event);
  };

  it('registers a consumer ACTIVE and refuses a second registration of the name', async () => {
    expect((await firstValueFrom(fanOut.describeConsumer('app')))?.status).to.equal('ACTIVE');
    expect(await firstValueFrom(fanOut.describeConsumer('other'))).to.equal(undefined);
    const error = await firstValueFrom(fanOut.registerConsumer('app')).catch((e: unknown) => e);
    expect(classifyAwsError(error)).to.equal('in-use');
  });

  it('pushes the records put after a LATEST subscription, and a ContinuationSequenceNumber that moves on while the shard is idle', () => {
    const old = stream.putRecord('k', 'old');
    advance(scheduler, 1234);
    const { handle } = subscribe({ type: 'LATEST' });
    expect(handle().streamTime?.getTime(), 'the stream\'s clock when it accepted').to.equal(1234);
    stream.putRecords([{ partitionKey: 'k', data: 'a' }, { partitionKey: 'k', data: 'b' }]);
    const first = pull(handle().next());
    expect(text(first.event)).to.deep.equal(['a', 'b']);
    const idle = pull(handle().next());
    expect(text(idle.event), 'a heartbeat: no record').to.deep.equal([]);
    expect(scheduler.now(), 'after the heartbeat interval').to.be.at.least(1234 + 5000);
    expect(idle.event?.continuationSequenceNumber).to.equal(first.event?.continuationSequenceNumber);
    expect(BigInt(idle.event?.continuationSequenceNumber ?? '0') > BigInt(old.sequenceNumber)).to.equal(true);
    expect(resumeAfter(idle.event?.continuationSequenceNumber, 'c'), 'a new subscription from the continuation').to.deep.equal(['c']);
  });

  it('a continuation on an empty shard is a valid AFTER_SEQUENCE_NUMBER below its first record', () => {
    const { handle } = subscribe({ type: 'TRIM_HORIZON' });
    const empty = pull(handle().next());
    expect(text(empty.event)).to.deep.equal([]);
    expect(resumeAfter(empty.event?.continuationSequenceNumber, 'first')).to.deep.equal(['first']);
  });

  it('ends a subscription after 5 minutes: the next pull emits undefined', () => {
    const { handle } = subscribe({ type: 'TRIM_HORIZON' });
    for (let i = 0; i < 59; i += 1) expect(pull(handle().next()).event).to.not.equal(undefined);
    const end = pull(handle().next());
    expect([end.done, end.event, scheduler.now()]).to.deep.equal([true, undefined, 300_000]);
  });

  it('refuses a second subscription within 5 s; a later one takes over and the first fails with ResourceInUseException', () => {
    const first = subscribe({ type: 'TRIM_HORIZON' });
    advance(scheduler, 4999);
    const early = subscribe({ type: 'TRIM_HORIZON' });
    expect(classifyAwsError(early.error())).to.equal('in-use');
    advance(scheduler, 1);
    const second = subscribe({ type: 'TRIM_HORIZON' });
    expect(second.error()).to.equal(undefined);
    stream.putRecord('k', 'x');
    expect(classifyAwsError(pull(first.handle().next()).error)).to.equal('in-use');
    expect(text(pull(second.handle().next()).event)).to.deep.equal(['x']);
  });

  it('the last event of a closed shard names its children and has no continuation; then the subscription ends', () => {
    stream.putRecord('k', 'before');
    const [low, high] = stream.split(shard);
    const { handle } = subscribe({ type: 'TRIM_HORIZON' });
    const last = pull(handle().next());
    expect(text(last.event)).to.deep.equal(['before']);
    expect([last.event?.continuationSequenceNumber, last.event?.childShardIds]).to.deep.equal([undefined, [low, high]]);
    const after = pull(handle().next());
    expect([after.done, after.event]).to.deep.equal([true, undefined]);
  });
});
