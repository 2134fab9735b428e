// What the in-memory ports' calls would cost on DynamoDB. Each port call maps to the requests the
// real adapter (src/dynamodb/*.ts) sends for it, and each request to the capacity DynamoDB bills:
//
//   LeaseStore (lease-store.ts)          read → GetItem · readMany(n) → ⌈n/100⌉ BatchGetItem (n items)
//                                        capture → GetItem, then UpdateItem if the lease looked available
//                                        commit / renew / release → UpdateItem (conditional)
//   MembershipStore (membership-store.ts) heartbeat → UpdateItem (conditional; the first, GetItem + UpdateItem)
//                                        liveClients → Scan (whole table) · endExpired → UpdateItem per life ended
//                                        deregister → DeleteItem · reapStale → Scan + DeleteItem each
//   MetadataStore (metadata-store.ts)    acquireLeadership → PutItem (conditional) · stepDown → UpdateItem
//                                        leader / readShardCache → GetItem · writeShardCache → PutItem
//                                        groupEpoch → GetItem (eventually consistent: half the units) · bumpGroupEpoch → UpdateItem
//   a capture that succeeds also writes its fencing token (metadata UpdateItem) before the row.
//
// Every read the adapters make is strongly consistent (ConsistentRead: true) but the group epoch's: 1 read request unit
// per 4 KB of each item (a Scan: of all items scanned together; a BatchGetItem: of each item). A
// write costs 1 write request unit per 1 KB of the larger of the item before and after, failed
// conditions included. Item sizes are computed as DynamoDB counts them (CapacityUnitCalculations):
// attribute names + values, numbers 1 byte per two significant digits + 1, lists 3 bytes + 1 per
// element. The items are the ones the real adapters build, obtained by running them against
// a recording stand-in for the DynamoDB client (below), never re-typed here.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { type Observable, defer, lastValueFrom, map, of } from 'rxjs';
import type { CachedShard } from '../../src/ports/coordination.js';
import type { Dynamo, Item } from '../../src/dynamodb/dynamo.js';
import { DynamoLeaseStore } from '../../src/dynamodb/lease-store.js';
import { DynamoMembershipStore } from '../../src/dynamodb/membership-store.js';
import { DynamoMetadataStore, encodeShardCache } from '../../src/dynamodb/metadata-store.js';

/** Bytes of one attribute value as DynamoDB counts them. */
export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S, 'utf8');
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.NULL !== undefined || value.BOOL !== undefined) return 1;
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + valueSize(element) + 1, 0);
  if (value.M !== undefined) return 3 + Object.entries(value.M).reduce((sum, [name, element]) => sum + Buffer.byteLength(name, 'utf8') + valueSize(element) + 1, 0);
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + Buffer.byteLength(s, 'utf8'), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  throw new Error(`unknown attribute value ${JSON.stringify(value)}`);
}

function numberSize(text: string): number {
  const digits = text.replace(/^-/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** Bytes of an item as DynamoDB counts them (what capacity and the 400 KB limit are measured on). */
export function itemSize(item: Item): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name, 'utf8') + valueSize(value), 0);
}

export const readUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / 4096));
export const writeUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));

// ------------------------------------------------------------------ the items the adapters write

/** Just enough of the Dynamo wrapper for the adapters: applies writes to a map, checks no condition. */
class RecordingDynamo {
  readonly items = new Map<string, Item>();
  lastWritten: Item | undefined;

  getItem(input: { TableName?: string; Key?: Item }): Observable<Item | undefined> {
    return defer(() => of(this.items.get(key(input.TableName, input.Key))));
  }

  /** As the adapter's: the same read, and no server clock. */
  getItemDated(input: { TableName?: string; Key?: Item }): Observable<{ readonly item: Item | undefined; readonly serverDate: Date | undefined }> {
    return this.getItem(input).pipe(map((item) => ({ item, serverDate: undefined })));
  }

  /** As the adapter's: the same write, and no server clock. */
  updateItemDated(input: Parameters<RecordingDynamo['updateItem']>[0]): Observable<{ readonly item: Item | undefined; readonly serverDate: Date | undefined }> {
    return this.updateItem(input).pipe(map((item) => ({ item, serverDate: undefined })));
  }

  putItem(input: { TableName?: string; Item?: Item }): Observable<void> {
    return defer(() => {
      const item = input.Item ?? {};
      const first = Object.entries(item)[0];
      this.items.set(key(input.TableName, first === undefined ? {} : { [first[0]]: first[1] }), item);
      this.lastWritten = item;
      return of(undefined);
    });
  }

  updateItem(input: { TableName?: string; Key?: Item; UpdateExpression?: string; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Item }): Observable<Item | undefined> {
    return defer(() => {
      const id = key(input.TableName, input.Key);
      const item: Item = { ...(this.items.get(id) ?? input.Key ?? {}) };
      const names = input.ExpressionAttributeNames ?? {};
      const values = input.ExpressionAttributeValues ?? {};
      const expression = input.UpdateExpression ?? '';
      // Each clause runs to the next keyword: SET a = :a, ... REMOVE b ... ADD c :c ... DELETE d :d.
      const clause = (keyword: string) => new RegExp(`${keyword} (.*?)(?= (?:SET|REMOVE|ADD|DELETE) |$)`).exec(expression)?.[1];
      for (const part of clause('SET')?.split(', ') ?? []) {
        const [name, value] = part.split(' = ');
        const attribute = names[name ?? ''];
        const attributeValue = values[value ?? ''];
        if (attribute === undefined || attributeValue === undefined) throw new Error(`cannot apply ${part}`);
        item[attribute] = attributeValue;
      }
      for (const name of clause('REMOVE')?.split(', ') ?? []) {
        const attribute = names[name];
        if (attribute !== undefined) delete item[attribute];
      }
      for (const part of clause('ADD')?.split(', ') ?? []) {
        const [name, value] = part.split(' ');
        const attribute = names[name ?? ''];
        const added = values[value ?? ''];
        if (attribute === undefined || added === undefined) throw new Error(`cannot apply ADD ${part}`);
        const before = item[attribute];
        item[attribute] = added.N !== undefined ? { N: String(Number(before?.N ?? 0) + Number(added.N)) } : { SS: [...new Set([...(before?.SS ?? []), ...(added.SS ?? [])])] };
      }
      this.items.set(id, item);
      this.lastWritten = item;
      return of(item);
    });
  }
}

function key(table: string | undefined, itemKey: Item | undefined): string {
  return `${table ?? ''}/${JSON.stringify(itemKey ?? {})}`;
}

/** A client id as a default Kinsumer makes one (a random UUID), and a host name like EC2's. */
const CLIENT_ID = '6f1c2b7e-2d4a-4c3e-9b8a-1f0e5d6c7b8a';
const CLIENT_NAME = 'ip-10-123-234-145.ec2.internal';
const NOW_MS = 1_764_000_000_000;

/** Sizes of the items the real adapters write, for a group of one stream. */
export class ItemSizes {
  readonly #clientsRow = new Map<number, number>();

  /**
   * The largest checkpoints row: captured, committed at a 56-digit sequence number, released (so
   * LastOwnerID is set), captured again by another client, Finished written.
   */
  async checkpointRowBytes(shardId: string): Promise<number> {
    const dynamo = new RecordingDynamo();
    const store = (clientId: string) => new DynamoLeaseStore({
      dynamo: dynamo as unknown as Dynamo, table: 'app_checkpoints', clientId, clientName: CLIENT_NAME, leaseTtlMs: 15_000, now: () => NOW_MS,
    });
    const sequenceNumber = '49590338271490256608559692538361571095921575989136588898';
    let largest = 0;
    const track = () => { largest = Math.max(largest, itemSize(dynamo.lastWritten ?? {})); };
    const first = await lastValueFrom(store(CLIENT_ID).capture(shardId));
    track();
    if (first === undefined) throw new Error('capture failed');
    await lastValueFrom(store(CLIENT_ID).commit(first, { checkpoint: { type: 'position', position: { sequenceNumber } }, finished: false }), { defaultValue: undefined });
    track();
    await lastValueFrom(store(CLIENT_ID).release(first, { checkpoint: { type: 'position', position: { sequenceNumber } }, finished: false }), { defaultValue: undefined });
    track();
    const other = CLIENT_ID.replace('6f', '7a');
    const second = await lastValueFrom(store(other).capture(shardId));
    track();
    if (second === undefined) throw new Error('capture failed');
    await lastValueFrom(store(other).commit(second, { checkpoint: { type: 'position', position: { sequenceNumber, subSequenceNumber: 12_345 } }, finished: true }), { defaultValue: undefined });
    track();
    return largest;
  }

  /** A clients row listing `shards` held shards (ids as the stream names them). */
  clientsRowBytes(shardIds: readonly string[]): number {
    const known = this.#clientsRow.get(shardIds.length);
    if (known !== undefined) return known;
    const dynamo = new RecordingDynamo();
    const store = new DynamoMembershipStore({ dynamo: dynamo as unknown as Dynamo, table: 'app_clients', clientId: CLIENT_ID, clientName: CLIENT_NAME, leaseTtlMs: 15_000, now: () => NOW_MS });
    store.heartbeat(shardIds).subscribe();
    const bytes = itemSize(dynamo.lastWritten ?? {});
    this.#clientsRow.set(shardIds.length, bytes);
    return bytes;
  }

  /** The leader lock item. */
  leaderItemBytes(): number {
    const dynamo = new RecordingDynamo();
    new DynamoMetadataStore({ dynamo: dynamo as unknown as Dynamo, table: 'app_metadata', clientId: CLIENT_ID, clientName: CLIENT_NAME, leaseTtlMs: 15_000, now: () => NOW_MS })
      .acquireLeadership().subscribe();
    return itemSize(dynamo.lastWritten ?? {});
  }

  /** The shard cache item for `shards`. */
  shardCacheBytes(shards: readonly CachedShard[]): number {
    return itemSize(encodeShardCache(shards, NOW_MS));
  }
}

// ------------------------------------------------------------------ the meter

/** On-demand prices assumed (us-east-1, as of 2025): per million request units. */
export const PRICES = { writePerMillion: 0.625, readPerMillion: 0.125 } as const;
/** AWS bills a month as 730 hours. */
export const SECONDS_PER_MONTH = 730 * 3600;

/** Requests and capacity units, by table and request kind. */
export class DynamoMeter {
  readonly requests = new Map<string, number>();
  /** Capacity units (read or write, as the kind says) by request kind. */
  readonly units = new Map<string, number>();
  readUnits = 0;
  writeUnits = 0;

  read(what: string, units: number, requests = 1): void {
    this.#count(what, units, requests);
    this.readUnits += units;
  }

  write(what: string, units: number, requests = 1): void {
    this.#count(what, units, requests);
    this.writeUnits += units;
  }

  /** A copy, to take differences over a window. */
  snapshot(): MeterSnapshot {
    return { requests: new Map(this.requests), units: new Map(this.units), readUnits: this.readUnits, writeUnits: this.writeUnits };
  }

  #count(what: string, units: number, requests: number): void {
    this.requests.set(what, (this.requests.get(what) ?? 0) + requests);
    this.units.set(what, (this.units.get(what) ?? 0) + units);
  }
}

/** The meter's counts at one moment. */
export interface MeterSnapshot {
  readonly requests: ReadonlyMap<string, number>;
  readonly units: ReadonlyMap<string, number>;
  readonly readUnits: number;
  readonly writeUnits: number;
}
