// Figure 5 — DynamoDB cost. Two Kinsumers (default timings) share a stream of 8 shards; a
// producer writes to 4 of them (busy) and leaves 4 idle. SDK middleware on each client's
// DynamoDB client records every call (command, table, item key) over the measured window, after
// the group has settled (every shard held). Reported per minute: per busy shard, per idle shard,
// per client (membership, leadership, shard list, lease rows read by its checks, the group-epoch
// poll), the total, and the Go kinsumer's cost model for the same group (kinsumer-go-behavior.md §17).
//
//   npx tsx bench/dynamo-cost.ts [--quick]
import { DEFAULTS, Kinsumer, createTables, type KinsumerEvent } from '../src/index.js';
import { createStream, listShards, localDynamoDbClient, localKinesisClient } from '../src/testing/index.js';
import { CallLog, countBy, countCalls, type DynamoCall, dollarsPerMonth } from './support/dynamo-calls.js';
import { type Figure, type Metric, type RunOptions, log, main, round, sleep, waitFor } from './support/harness.js';
import { startServerProcess } from './support/local-servers.js';
import { produce } from './support/produce.js';

interface Settings {
  readonly shards: number;
  readonly busyShards: number;
  readonly clients: number;
  readonly windowMs: number;
  readonly recordsPerSecondPerBusyShard: number;
}

function settingsFor(options: RunOptions): Settings {
  if (options.tiny === true) return { shards: 4, busyShards: 2, clients: 2, windowMs: 5000, recordsPerSecondPerBusyShard: 10 };
  if (options.quick) return { shards: 8, busyShards: 4, clients: 2, windowMs: 15_000, recordsPerSecondPerBusyShard: 20 };
  return { shards: 8, busyShards: 4, clients: 2, windowMs: 60_000, recordsPerSecondPerBusyShard: 20 };
}

/** The Go kinsumer's calls per minute with default settings (§17), for a group like ours. */
function goModel(settings: Settings): { perClient: number; leaderExtra: number; perBusyShard: number; perIdleShard: number; total: number } {
  const perClient = 3; // heartbeat put, clients scan, metadata get
  const leaderExtra = 4; // lock put, cache get, checkpoints scan, clients scan
  const perBusyShard = 60; // a checkpoint put per second (only when it moved)
  const perIdleShard = 0; // an owned idle shard writes nothing (the cause of its 5-minute staleness)
  const total = settings.clients * perClient + leaderExtra + settings.busyShards * perBusyShard + (settings.shards - settings.busyShards) * perIdleShard;
  return { perClient, leaderExtra, perBusyShard, perIdleShard, total };
}

export const dynamoCost: Figure = {
  name: 'dynamo-cost',
  title: 'DynamoDB calls per minute: per busy shard, per idle shard, per client; against the Go cost model',
  async run(options) {
    const settings = settingsFor(options);
    const server = await startServerProcess();
    const kinesis = localKinesisClient(server);
    const setup = localDynamoDbClient(server);
    const app = `bench-cost-${process.pid}`;
    const streamName = `bench-cost-${process.pid}`;
    const logs: CallLog[] = [];
    const clients: Array<{ kinsumer: Kinsumer; leader: boolean; held: Set<string> }> = [];
    let stopProducing: (() => Promise<void>) | undefined;
    try {
      await createStream(kinesis, streamName, settings.shards);
      await createTables({ dynamodb: setup, applicationName: app });
      const shards = await listShards(kinesis, streamName);
      const busy = shards.slice(0, settings.busyShards);
      const busyIds = new Set(busy.map((s) => s.ShardId ?? ''));
      stopProducing = produce(kinesis, streamName, busy.map((s) => s.HashKeyRange?.StartingHashKey ?? '0'), settings.recordsPerSecondPerBusyShard);
      for (let i = 0; i < settings.clients; i += 1) {
        const callLog = new CallLog();
        logs.push(callLog);
        const dynamodb = localDynamoDbClient(server);
        countCalls(dynamodb, callLog);
        const kinsumer = new Kinsumer({ streamName, applicationName: app, clientId: `client-${i}`, kinesis: localKinesisClient(server), dynamodb });
        const client = { kinsumer, leader: false, held: new Set<string>() };
        kinsumer.events$.subscribe((event: KinsumerEvent) => {
          if (event.type === 'leader-acquired') client.leader = true;
          if (event.type === 'leader-lost') client.leader = false;
          if (event.type === 'lease-acquired') client.held.add(event.shardId);
          if (event.type === 'lease-released' || event.type === 'lease-lost') client.held.delete(event.shardId);
        });
        kinsumer.records$.subscribe((record) => record.ack());
        clients.push(client);
      }
      const balanced = () => {
        const counts = clients.map((c) => c.held.size);
        return counts.reduce((a, b) => a + b, 0) === settings.shards && Math.max(...counts) - Math.min(...counts) <= 1;
      };
      await waitFor(balanced, 'every shard held, balanced', 120_000);
      // One more membership period, so start-up reads (the first shard list, captures) are behind us.
      await sleep(DEFAULTS.shardCheckFrequencyMs + 500);
      log(`settled: ${clients.map((c) => c.held.size).join('/')} shards; measuring ${settings.windowMs} ms`);
      const from = Date.now();
      await sleep(settings.windowMs);
      const to = Date.now();
      const window = (list: readonly DynamoCall[]) => list.filter((c) => c.atMs >= from && c.atMs < to);
      const perClientCalls = logs.map((l) => window(l.calls));
      const all = perClientCalls.flat();
      const minutes = (to - from) / 60_000;
      const checkpointsTable = `${app}_checkpoints`;
      const onShard = (call: DynamoCall, ids: (id: string) => boolean) => call.table === checkpointsTable && call.key !== undefined && ids(call.key);
      const busyCalls = all.filter((c) => onShard(c, (id) => busyIds.has(id)));
      const idleCalls = all.filter((c) => onShard(c, (id) => !busyIds.has(id)));
      const coordination = perClientCalls.map((calls) => calls.filter((c) => !onShard(c, () => true)));
      const idleCount = settings.shards - settings.busyShards;
      const perBusy = busyCalls.length / settings.busyShards / minutes;
      const perIdle = idleCalls.length / idleCount / minutes;
      const leaderIndex = clients.findIndex((c) => c.leader);
      const followerCalls = coordination.filter((_, i) => i !== leaderIndex).map((c) => c.length / minutes);
      const perFollower = followerCalls.reduce((a, b) => a + b, 0) / Math.max(1, followerCalls.length);
      const perLeader = leaderIndex >= 0 ? (coordination[leaderIndex]?.length ?? 0) / minutes : Number.NaN;
      const total = all.length / minutes;
      // Of the coordination: the group-epoch poll (a graceful departure seen within a poll) and the
      // lease rows its checks read (those it would inherit should their owner die, and any suspect's).
      const metadataTable = `${app}_metadata`;
      const epochReads = coordination.map((calls) => calls.filter((c) => c.command === 'GetItem' && c.table === metadataTable && c.key === 'GroupEpoch').length / minutes);
      const perClientEpoch = epochReads.reduce((a, b) => a + b, 0) / Math.max(1, epochReads.length);
      const rowReads = coordination.map((calls) => calls.filter((c) => c.command === 'BatchGetItem'));
      const perClientBatches = rowReads.reduce((a, calls) => a + calls.length, 0) / Math.max(1, rowReads.length) / minutes;
      const perClientRows = rowReads.reduce((a, calls) => a + calls.reduce((n, c) => n + (c.items ?? 0), 0), 0) / Math.max(1, rowReads.length) / minutes;
      const go = goModel(settings);
      const idlePerShardDollars = dollarsPerMonth(idleCalls, minutes) / idleCount;
      const perClientDollars = dollarsPerMonth(coordination.flat(), minutes) / Math.max(1, coordination.length);
      const scans = all.filter((c) => c.command === 'Scan');
      const bigScans = scans.filter((c) => c.table !== `${app}_clients`);
      const metrics: Metric[] = [
        { name: 'per busy shard', value: round(perBusy), unit: 'calls/min', baseline: { name: 'Go model', value: go.perBusyShard, unit: 'calls/min' }, ratio: round(perBusy / go.perBusyShard) },
        {
          name: 'per idle shard (held, no records)', value: round(perIdle), unit: 'calls/min', baseline: { name: 'Go model', value: go.perIdleShard, unit: 'calls/min' },
          target: '<= 1 (a keep-alive: the lease lives by its owner\'s heartbeat)', met: perIdle <= 1.05,
          note: 'Go writes nothing for an idle shard, which is why its leases go stale after 5 min',
        },
        { name: 'per idle shard, DynamoDB on demand', value: round(idlePerShardDollars * 1000) / 1000, unit: '$/month', target: '<= $0.10', met: idlePerShardDollars <= 0.1 },
        {
          name: 'per client (coordination), non-leader', value: round(perFollower), unit: 'calls/min', baseline: { name: 'Go model', value: go.perClient, unit: 'calls/min' }, ratio: round(perFollower / go.perClient),
          target: '<= 150 (half of ~300 before)', met: perFollower <= 150,
        },
        { name: 'per client (coordination), DynamoDB on demand', value: round(perClientDollars * 100) / 100, unit: '$/month' },
        { name: 'per client (coordination), leader', value: round(perLeader), unit: 'calls/min', baseline: { name: 'Go model', value: go.perClient + go.leaderExtra, unit: 'calls/min' }, ratio: round(perLeader / (go.perClient + go.leaderExtra)) },
        { name: 'of which, per client: group-epoch reads (GetItem, eventually consistent)', value: round(perClientEpoch), unit: 'calls/min', note: 'one per max(throttleDelayMs, 1 s): a drain or a departure is seen within a poll (the departing member keeps reading until its successor is ready)' },
        { name: 'of which, per client: lease-row reads by its checks (BatchGetItem)', value: round(perClientBatches), unit: 'calls/min', note: `${round(perClientRows)} rows/min: the rows it would inherit should their owner die` },
        { name: `total, ${settings.shards} shards (${settings.busyShards} busy), ${settings.clients} clients`, value: round(total), unit: 'calls/min', baseline: { name: 'Go model', value: go.total, unit: 'calls/min' }, ratio: round(total / go.total) },
        { name: 'full scans of a table other than <app>_clients', value: bigScans.length, unit: '', target: '0 in steady state', met: bigScans.length === 0 },
      ];
      return {
        settings: { ...settings, kinsumerOptions: 'defaults (commitFrequencyMs 1000, shardCheckFrequencyMs 5000, leaderActionFrequencyMs 10000, leaseTtlMs 15000)' },
        metrics,
        notes: [
          'Counted by SDK middleware at the initialize step: one count per call, whatever the SDK retries.',
          'Per-shard calls are the checkpoints-table calls naming that shard (commits, keep-alives, captures); everything else is the client\'s coordination: a heartbeat UpdateItem every leaseTtlMs / 3, per shard check a clients Scan and a shard-list GetItem (lease rows only of legacy holders it would inherit), the leader\'s lock PutItem, a group-epoch GetItem every max(throttleDelayMs, 1 s). docs/liveness.md.',
          'Dollars: from each call\'s capacity units (bench/support/dynamo-calls.ts: every item under 1 KB; one write unit; one read unit per item, half for an eventually consistent read such as the epoch\'s), at $0.625 per million write units and $0.125 per million read units.',
          'Go model (kinsumer-go-behavior.md §17): per client 3/min; leader +4/min (and a full checkpoints-table scan); busy shard up to 60 puts/min; an owned idle shard 0; a shard waiting for capture 240 gets/min.',
        ],
        details: {
          windowMs: to - from,
          heldPerClient: clients.map((c) => [...c.held].sort()),
          leader: leaderIndex >= 0 ? `client-${leaderIndex}` : 'none seen',
          busyShards: [...busyIds],
          byCommandAndTable: countBy(all, (c) => `${c.command} ${c.table.replace(`${app}_`, '<app>_')}`),
          perClientByCommandAndTable: perClientCalls.map((calls) => countBy(calls, (c) => `${c.command} ${c.table.replace(`${app}_`, '<app>_')}`)),
          perShard: countBy(all.filter((c) => onShard(c, () => true)), (c) => `${c.key ?? ''} ${c.command}`),
          goModel: go,
        },
      };
    } finally {
      await stopProducing?.();
      await Promise.all(clients.map((c) => c.kinsumer.stop().catch(() => undefined)));
      kinesis.destroy();
      setup.destroy();
      await server.stop();
    }
  },
};

main(dynamoCost, import.meta.url);
