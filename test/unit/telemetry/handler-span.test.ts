// OpenTelemetry spans (design §7.4): one span per processRecords / processBatches handler call,
// after the messaging conventions, seen through the SDK's in-memory span exporter, on virtual time.
import { readFileSync } from 'node:fs';
import { type Context, type ContextManager, ROOT_CONTEXT, SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { expect } from 'chai';
import { lastValueFrom, of } from 'rxjs';
import { processBatches, processRecords } from '../../../src/index.js';
import type { KinsumerRecord } from '../../../src/types.js';
import { MemoryGroup } from '../../support/memory-group.js';
import { testTracer } from '../../support/otel.js';

const packageJson = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };

const text = (record: KinsumerRecord): string => new TextDecoder().decode(record.data);

/** A context manager for synchronous code (the SDK's async-hooks one is a package of its own). */
class StackContextManager implements ContextManager {
  #stack: Context[] = [];
  active(): Context {
    return this.#stack.at(-1) ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    this.#stack.push(ctx);
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.#stack.pop();
    }
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.#stack = [];
    return this;
  }
}

async function stopAll(group: MemoryGroup): Promise<void> {
  let stopped = 0;
  for (const member of group.members) void member.kinsumer.stop().finally(() => { stopped += 1; });
  await group.scheduler.until(() => stopped === group.members.length, 'every member stopped', 20_000);
}

describe('OpenTelemetry spans of the processing operators (virtual time)', function () {
  this.timeout(30_000);

  before(() => {
    context.setGlobalContextManager(new StackContextManager());
  });

  after(() => {
    context.disable();
  });

  it("processRecords: one span per handler call, 'process <stream>', with the record's messaging attributes; a failed call has status ERROR and its exception", async () => {
    const tracing = testTracer();
    const group = new MemoryGroup(2, { tracerProvider: tracing.provider });
    group.stream.putRecords(Array.from({ length: 10 }, (_, i) => ({ partitionKey: `k${i}`, data: `r${i}` })));
    const calls: { data: string; attempt: number; spanId: string | undefined }[] = [];
    const member = group.join('a', {
      pipeline: processRecords((record, ctx) => {
        calls.push({ data: text(record), attempt: ctx.attempt, spanId: trace.getActiveSpan()?.spanContext().spanId });
        if (text(record) === 'r2' && ctx.attempt === 1) throw new Error('boom');
      }, { retry: { maxAttempts: 3, initialDelayMs: 10 }, scheduler: group.scheduler }),
    });
    await group.scheduler.until(() => member.kinsumer.status().shards.every((s) => s.inFlight === 0) && member.received.length === 10 && calls.length === 11, 'every record processed', 10_000);

    const spans: readonly ReadableSpan[] = tracing.exporter.getFinishedSpans();
    expect(spans).to.have.length(11);
    // Each call ran inside its own span: the handler's own spans would be its children.
    expect(new Set(calls.map((c) => c.spanId))).to.deep.equal(new Set(spans.map((s) => s.spanContext().spanId)));
    for (const call of calls) {
      const span = spans.find((s) => s.spanContext().spanId === call.spanId);
      const record = member.received.find((r) => text(r) === call.data);
      expect(span, `the span active in the call on ${call.data}`).to.not.equal(undefined);
      expect(span?.name).to.equal('process memory');
      expect(span?.kind).to.equal(SpanKind.CONSUMER);
      expect(span?.instrumentationScope.name).to.equal('kinsumer');
      expect(span?.instrumentationScope.version).to.equal(packageJson.version);
      expect(span?.attributes).to.deep.equal({
        'messaging.system': 'aws_kinesis',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': 'memory',
        'messaging.destination.partition.id': record?.shardId,
        'messaging.message.id': record?.sequenceNumber,
        'kinsumer.stream': 'memory',
        'kinsumer.shard_id': record?.shardId,
        'kinsumer.attempt': call.attempt,
      });
      const failed = call.data === 'r2' && call.attempt === 1;
      expect(span?.status, call.data).to.deep.equal(failed ? { code: SpanStatusCode.ERROR, message: 'boom' } : { code: SpanStatusCode.UNSET });
      expect(span?.events.map((e) => [e.name, e.attributes?.['exception.message']])).to.deep.equal(failed ? [['exception', 'boom']] : []);
    }
    await stopAll(group);
  });

  it('processBatches: one span per batch call, with the batch size as messaging.batch.message_count', async () => {
    const tracing = testTracer();
    const group = new MemoryGroup(1, { tracerProvider: tracing.provider });
    group.stream.putRecords(Array.from({ length: 25 }, (_, i) => ({ partitionKey: 'k', data: `r${i}` })));
    const sizes: number[] = [];
    const member = group.join('a', {
      pipeline: processBatches((records) => { sizes.push(records.length); }, { maxSize: 10, scheduler: group.scheduler }),
    });
    await group.scheduler.until(() => sizes.reduce((a, b) => a + b, 0) === 25 && member.kinsumer.status().shards[0]?.inFlight === 0, 'every batch processed', 10_000);
    const spans = tracing.exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).to.deep.equal(sizes.map(() => 'process memory'));
    expect(spans.map((s) => s.attributes['messaging.batch.message_count'] ?? 1)).to.deep.equal(sizes);
    // One record in a batch is one message: its id instead of a count.
    for (const span of spans) expect(span.attributes['messaging.message.id'] === undefined).to.equal(span.attributes['messaging.batch.message_count'] !== undefined);
    expect(spans.every((s) => s.attributes['kinsumer.shard_id'] === 'shardId-000000000000' && s.status.code === SpanStatusCode.UNSET)).to.equal(true);
    await stopAll(group);
  });

  it('a record no Kinsumer delivered is traced through the global provider, as `process`', async () => {
    const tracing = testTracer();
    trace.setGlobalTracerProvider(tracing.provider);
    try {
      const record = { shardId: 'shardId-000000000007', sequenceNumber: '49', partitionKey: 'k', data: new Uint8Array(), approximateArrivalTimestamp: new Date(0), ack: () => undefined } as unknown as KinsumerRecord;
      await lastValueFrom(of(record).pipe(processRecords(() => undefined)));
      const [span] = tracing.exporter.getFinishedSpans();
      expect(span?.name).to.equal('process');
      expect(span?.attributes['messaging.message.id']).to.equal('49');
      expect(span?.attributes['messaging.destination.name']).to.equal(undefined);
    } finally {
      trace.disable();
    }
  });
});
