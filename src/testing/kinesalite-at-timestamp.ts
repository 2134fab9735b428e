// kinesalite 3.3.3 never answers GetShardIterator AT_TIMESTAMP when no record of the shard arrived
// at or after the time: its action searches the shard for the first such record and only answers
// when it finds one (the search has no end case). A start kept at a time on a quiet shard then
// costs a request timeout per attempt. Kinesis answers with an iterator at the shard's tip, from
// which the records put later are read. This wraps kinesalite's action so that it does the same:
// the tip (its own LATEST answer, taken first, so no record arriving meanwhile is skipped), unless
// a record at or after the time is there, in which case kinesalite's own answer is prompt.
type Callback = (error: unknown, result?: unknown) => void;
type Request = Readonly<Record<string, unknown>>;
/** kinesalite's store, as far as this needs it. */
interface Store {
  getStreamDb(streamName: string): { createReadStream(options: { gt: string; lt: string }): ReadableItems };
}
interface ReadableItems {
  on(event: 'data', listener: (item: { value?: { ApproximateArrivalTimestamp?: number } }) => void): ReadableItems;
  on(event: 'end' | 'close', listener: () => void): ReadableItems;
  on(event: 'error', listener: (error: unknown) => void): ReadableItems;
  destroy(): void;
}
type Action = (store: Store, data: Request, cb: Callback) => void;
/** kinesalite's db helpers used here. */
interface Db {
  resolveShardId(shardId: unknown): { readonly shardIx: number };
  shardIxToHex(shardIx: number): string;
}

const PATCHED = Symbol.for('kinsumer.kinesalite.atTimestamp');

/**
 * Puts the answering action in place of kinesalite's own, before kinesalite loads its actions
 * (it takes them once, at its first require). `false` when kinesalite was loaded before by
 * someone else: its actions are taken then, and this cannot change them.
 */
export function answerAtTimestampOnQuietShards(require: NodeJS.Require): boolean {
  const actionPath = require.resolve('kinesalite/actions/getShardIterator');
  const patched = require.cache[actionPath]?.exports as { [PATCHED]?: true } | undefined;
  if (patched?.[PATCHED] === true) return true;
  if (require.cache[require.resolve('kinesalite')] !== undefined) return false;
  const original = require(actionPath) as Action;
  const db = require('kinesalite/db') as Db;
  const module = require.cache[actionPath];
  if (module === undefined) return false;
  module.exports = Object.assign(answering(original, db), { [PATCHED]: true });
  return true;
}

function answering(original: Action, db: Db): Action {
  return (store, data, cb) => {
    const { Timestamp: timestamp, StreamName: streamName } = data;
    // Anything else, and a time kinesalite refuses (in the future), as kinesalite answers it.
    if (data.ShardIteratorType !== 'AT_TIMESTAMP' || typeof timestamp !== 'number' || timestamp * 1000 > Date.now() || typeof streamName !== 'string') {
      original(store, data, cb);
      return;
    }
    original(store, { ...data, ShardIteratorType: 'LATEST', Timestamp: undefined }, (error, tip) => {
      if (error !== null && error !== undefined) return cb(error);
      anyArrivedSince(store, db, streamName, data.ShardId, timestamp, (searchError, found) => {
        if (searchError !== undefined) return cb(searchError);
        if (found) return original(store, data, cb);
        cb(null, tip);
      });
    });
  };
}

/** Whether a record of the shard arrived at or after `timestamp` (seconds, as kinesalite stores it). */
function anyArrivedSince(store: Store, db: Db, streamName: string, shardId: unknown, timestamp: number, done: (error: unknown, found: boolean) => void): void {
  const { shardIx } = db.resolveShardId(shardId);
  const items = store.getStreamDb(streamName).createReadStream({ gt: db.shardIxToHex(shardIx), lt: db.shardIxToHex(shardIx + 1) });
  let settled = false;
  const settle = (error: unknown, found: boolean) => {
    if (settled) return;
    settled = true;
    done(error, found);
  };
  items.on('data', (item) => {
    if ((item.value?.ApproximateArrivalTimestamp ?? -Infinity) < timestamp) return;
    settle(undefined, true);
    items.destroy();
  });
  items.on('end', () => settle(undefined, false));
  items.on('close', () => settle(undefined, false));
  items.on('error', (error) => settle(error, false));
}
