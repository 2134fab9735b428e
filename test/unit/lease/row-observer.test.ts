import { expect } from 'chai';
import { leaseAvailable, leaseVersion } from '../../../src/lease/capture-rule.js';
import { LeaseObservations } from '../../../src/lease/lease-observations.js';
import type { LiveClient } from '../../../src/ports/coordination.js';
import { nextExpiryMs } from '../../../src/group/coordinator.js';
import { assignerFor, assignmentInput, goPlan, rowsToRead, successorWatch } from '../../../src/group/group-view.js';
import type { CheckpointRow } from '../../../src/ports/lease-store.js';
import { RowObserver } from '../../../src/lease/row-observer.js';

const TTL = 15_000;
const row = (fields: Partial<CheckpointRow>): CheckpointRow => ({
  shardId: 's', checkpoint: undefined, ownerId: undefined, ownerName: undefined, lastUpdateNs: undefined,
  finished: false, leaseCounter: 0, lastOwnerId: undefined, ...fields,
});
const client = (id: string, unchangedForMs: number, shardIds?: string[]): LiveClient => ({
  id, name: undefined, lastUpdateNs: 0n, shardIds, unchangedForMs, expiresInMs: TTL - unchangedForMs, instanceId: undefined, library: undefined,
});

describe('expiry by local observation (pure)', () => {
  describe('RowObserver', () => {
    it('counts from the first read that showed a value; a change starts again from 0', () => {
      const seen = new RowObserver();
      expect(seen.see('k', 'v1', 1000)).to.equal(0);
      expect(seen.see('k', 'v1', 1500)).to.equal(500);
      expect(seen.see('k', 'v2', 1600)).to.equal(0);
      expect(seen.see('k', 'v2', 9600)).to.equal(8000);
      expect(seen.see('other', 'v2', 9600), 'per key').to.equal(0);
    });

    it('a clock that steps back never makes a row older; forget and keepOnly make a row new again', () => {
      const seen = new RowObserver();
      seen.see('k', 'v', 5000);
      expect(seen.see('k', 'v', 4000)).to.equal(0);
      seen.forget('k');
      expect(seen.see('k', 'v', 9000)).to.equal(0);
      seen.see('gone', 'v', 9000);
      seen.keepOnly(['k']);
      expect(seen.see('k', 'v', 9500)).to.equal(500);
      expect(seen.see('gone', 'v', 9500)).to.equal(0);
    });
  });

  describe('leaseAvailable', () => {
    const me = { clientId: 'me', ownToken: 7 };
    it('a free row (no row, no owner) is available at once, whatever its LastUpdate', () => {
      expect(leaseAvailable(undefined, me, 0, TTL)).to.equal(true);
      expect(leaseAvailable(row({ lastUpdateNs: 10n ** 30n }), me, 0, TTL)).to.equal(true);
    });

    it('an owned row only once seen unchanged for the TTL; LastUpdate plays no part', () => {
      const owned = row({ ownerId: 'other', leaseCounter: 3, lastUpdateNs: 1n });
      expect(leaseAvailable(owned, me, TTL - 1, TTL)).to.equal(false);
      expect(leaseAvailable(owned, me, TTL, TTL)).to.equal(true);
    });

    it('my clientId is mine only with my own token: another process with the same clientId is another owner (R8)', () => {
      expect(leaseAvailable(row({ ownerId: 'me', leaseCounter: 7 }), me, 0, TTL)).to.equal(true);
      expect(leaseAvailable(row({ ownerId: 'me', leaseCounter: 8 }), me, 0, TTL)).to.equal(false);
      expect(leaseAvailable(row({ ownerId: 'me', leaseCounter: 7 }), { clientId: 'me', ownToken: undefined }, 0, TTL)).to.equal(false);
    });

    it('the version changes with the owner, the counter and LastUpdate (to the nanosecond), and with nothing else', () => {
      const base = row({ ownerId: 'a', leaseCounter: 2, lastUpdateNs: 1_764_694_956_123_456_789n });
      expect(leaseVersion({ ...base, checkpoint: { type: 'LATEST' }, finished: true, lastOwnerId: 'x' })).to.equal(leaseVersion(base));
      for (const changed of [{ ownerId: 'b' }, { leaseCounter: 3 }, { lastUpdateNs: 1_764_694_956_123_456_790n }]) {
        expect(leaseVersion({ ...base, ...changed }), JSON.stringify(Object.keys(changed))).to.not.equal(leaseVersion(base));
      }
    });
  });

  describe('LeaseObservations', () => {
    it('a row the client has not seen before is live to it; its own captures are its own', () => {
      let now = 0;
      const leases = new LeaseObservations('me', TTL, () => now);
      const owned = row({ ownerId: 'other', leaseCounter: 1, lastUpdateNs: 5n });
      expect(leases.see('s', owned)).to.equal(false);
      now = TTL;
      expect(leases.see('s', owned)).to.equal(true);
      leases.captured('s', 2);
      expect(leases.see('s', row({ ownerId: 'me', leaseCounter: 2, lastUpdateNs: 6n }))).to.equal(true);
    });
  });

  describe('the coordinator\'s use of it', () => {
    it('nextExpiryMs: just after the first other row would expire for this reader', () => {
      expect(nextExpiryMs([client('me', 0)], 'me')).to.equal(undefined);
      expect(nextExpiryMs([client('me', 14_000), client('a', 2000), client('b', 9000)], 'me')).to.equal(TTL - 9000 + 1);
      expect(nextExpiryMs([client('b', TTL + 5)], 'me'), 'never in the past').to.equal(1);
    });

    it('rowsToRead: the leases of clients whose row stood still past half a heartbeat, not of others nor mine', () => {
      const shards = ['s1', 's2', 's3', 's4'].map((shardId) => ({ shardId, parentShardIds: [], open: true, finished: false }));
      const clients = [client('me', 5000, ['s1']), client('fresh', 2499, ['s2']), client('quiet', 2500, ['s3', 'gone-shard'])];
      expect(rowsToRead(shards, clients, { selfId: 'me', suspectAfterMs: 2500 })).to.deep.equal(['s3']);
    });

    it('successorWatch: every held shard is watched by exactly one other member, the one the rule gives it should its owner alone leave', () => {
      const shards = Array.from({ length: 10 }, (_, i) => ({ shardId: `s${i}`, parentShardIds: [], open: true, finished: false }));
      const holdings: Record<string, string[]> = { a: ['s0', 's1', 's2'], b: ['s3', 's4', 's5'], c: ['s6', 's7'], d: ['s8', 's9'] };
      const clients = Object.entries(holdings).map(([id, shardIds]) => ({ ...client(id, 0, shardIds), library: 'kinsumer-ts/0' }));
      const watchedBy = new Map<string, string[]>();
      for (const me of Object.keys(holdings)) {
        const input = assignmentInput(me, clients, shards, new Map());
        const watched = [...successorWatch(me, clients, assignerFor(undefined, input, shards)).values()].flat();
        expect(watched.filter((shardId) => holdings[me]?.includes(shardId)), `${me} never watches its own`).to.deep.equal([]);
        for (const shardId of watched) watchedBy.set(shardId, [...(watchedBy.get(shardId) ?? []), me]);
        // The watch names exactly what the rule would give `me` of each other member's shards.
        for (const [owner, held] of Object.entries(holdings)) {
          if (owner === me) continue;
          const without = assignerFor(undefined, input, shards)(Object.keys(holdings).filter((id) => id !== owner));
          expect(held.filter((shardId) => without.get(shardId) === me).every((shardId) => watched.includes(shardId)), `${me} watches what ${owner}'s departure gives it`).to.equal(true);
        }
      }
      expect([...watchedBy.keys()].sort()).to.deep.equal(shards.map((s) => s.shardId).sort());
      expect([...watchedBy.values()].every((watchers) => watchers.length === 1)).to.equal(true);
    });

    it('successorWatch under the Go rule: the round robin without the owner decides, Go members\' holdings included', () => {
      const shards = ['s0', 's1', 's2', 's3'].map((shardId) => ({ shardId, parentShardIds: [], open: true, finished: false }));
      // go holds s0 and s2 by the round robin over [go, me]; its row does not say so.
      const clients = [{ ...client('go', 0), library: undefined }, { ...client('me', 0, ['s1', 's3']), library: 'kinsumer-ts/0' }];
      const plan = goPlan('me', clients, shards);
      expect(plan?.goMembers).to.deep.equal(['go']);
      const holders = clients.map((c) => (c.id === 'go' ? { ...c, shardIds: ['s0', 's2'] } : c));
      const input = assignmentInput('me', clients, shards, new Map());
      expect(successorWatch('me', holders, assignerFor(plan, input, shards))).to.deep.equal(new Map([['go', ['s0', 's2']]]));
    });
  });
});
