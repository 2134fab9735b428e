// A SubscribeToShard response as a pull source: the SDK's async iterable of events is read one
// event per `next()`, never ahead, so an application that stops acking stops the reading and the
// HTTP/2 window holds the service back. Types only from the SDK: kinesis.ts sends the request.
import type { SubscribeToShardCommandOutput, SubscribeToShardEventStream, _Record as SdkRecord } from '@aws-sdk/client-kinesis';
import { type Observable, Observable as RxObservable, defer, from, switchMap, of } from 'rxjs';
import type { RawRecord, ShardEvent, ShardEventPull } from '../ports/stream.js';

/**
 * A cold Observable of one subscription: subscribing sends SubscribeToShard and emits a pull
 * handle once the service accepted; unsubscribing aborts the request and closes the iterator.
 */
export function subscription(
  send: (signal: AbortSignal) => Promise<SubscribeToShardCommandOutput>,
  toRecord: (record: SdkRecord) => RawRecord,
  streamTime: () => Date | undefined = () => undefined,
): Observable<ShardEventPull> {
  return new RxObservable<ShardEventPull>((subscriber) => {
    const controller = new AbortController();
    let iterator: AsyncIterator<SubscribeToShardEventStream> | undefined;
    send(controller.signal).then((out) => {
      if (out.EventStream === undefined) throw new Error('SubscribeToShard returned no event stream');
      const events = out.EventStream[Symbol.asyncIterator]();
      iterator = events;
      const acceptedAt = streamTime();
      subscriber.next({ next: () => pull(events, toRecord), ...(acceptedAt === undefined ? {} : { streamTime: acceptedAt }) });
    }).catch((error: unknown) => subscriber.error(error));
    return () => {
      controller.abort();
      // The iterator's own cleanup may reject once the request is aborted: nothing to report.
      iterator?.return?.().catch(() => undefined);
    };
  });
}

function pull(events: AsyncIterator<SubscribeToShardEventStream>, toRecord: (record: SdkRecord) => RawRecord): Observable<ShardEvent | undefined> {
  return defer(() => from(events.next())).pipe(switchMap((result): Observable<ShardEvent | undefined> => {
    if (result.done === true) return of(undefined);
    const event = result.value;
    if (event.SubscribeToShardEvent !== undefined) {
      const e = event.SubscribeToShardEvent;
      return of({
        records: (e.Records ?? []).map(toRecord),
        continuationSequenceNumber: e.ContinuationSequenceNumber ?? undefined,
        millisBehindLatest: e.MillisBehindLatest,
        childShardIds: e.ChildShards === undefined || e.ChildShards.length === 0 ? undefined : e.ChildShards.map((c) => c.ShardId ?? ''),
      });
    }
    // An exception event (InternalFailureException, ResourceInUseException, KMS...): an error
    // named as the service named it, so classifyAwsError can tell retry from give up.
    const [name, detail] = Object.entries(event).find(([key, value]) => key !== '$unknown' && value !== undefined) ?? [];
    if (name !== undefined) throw Object.assign(new Error(messageOf(detail) ?? name), { name });
    // A member this SDK does not know yet: skip it.
    return pull(events, toRecord);
  }));
}

function messageOf(detail: unknown): string | undefined {
  if (typeof detail !== 'object' || detail === null) return undefined;
  const message = (detail as { message?: unknown; Message?: unknown }).message ?? (detail as { Message?: unknown }).Message;
  return typeof message === 'string' ? message : undefined;
}
