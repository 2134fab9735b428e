import { expect } from 'chai';
import { START_SKEW_MARGIN_MS, inheritedStart, withResetFloor, isSkipped, planResume, planStart, startAfter, startOf, startToKeep, startingPositionOf } from '../../../src/reading/start-position.js';

const SEQ = '49590338271490256608559692538361571095921575989136588898';

describe('start position', () => {
  describe('planStart: from the checkpoint captured with the lease', () => {
    it('a checkpointed record resumes after it, whatever the initial position: read AT it and passed over (its record says whether the stream still keeps it, docs/data-loss.md)', () => {
      const plan = planStart({ type: 'position', position: { sequenceNumber: SEQ } }, 'LATEST');
      expect(plan).to.deep.equal({
        iteratorStart: { type: 'AT_SEQUENCE_NUMBER', sequenceNumber: SEQ },
        skipThrough: { sequenceNumber: SEQ },
        startingPosition: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ },
      });
    });

    it('a checkpoint inside a KPL aggregate resumes AT the aggregate and skips through the sub-record', () => {
      const plan = planStart({ type: 'position', position: { sequenceNumber: SEQ, subSequenceNumber: 41 } }, 'TRIM_HORIZON');
      expect(plan).to.deep.equal({
        iteratorStart: { type: 'AT_SEQUENCE_NUMBER', sequenceNumber: SEQ },
        skipThrough: { sequenceNumber: SEQ, subSequenceNumber: 41 },
        startingPosition: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ, subSequenceNumber: 41 },
      });
    });

    it('a stored LATEST reads from LATEST', () => {
      expect(planStart({ type: 'LATEST' }, 'TRIM_HORIZON')).to.deep.equal({
        iteratorStart: { type: 'LATEST' }, startingPosition: { type: 'LATEST' },
      });
    });

    it('no checkpoint: the initial position (TRIM_HORIZON, LATEST, AT_TIMESTAMP)', () => {
      expect(planStart(undefined, 'TRIM_HORIZON')).to.deep.equal({ iteratorStart: { type: 'TRIM_HORIZON' }, startingPosition: { type: 'TRIM_HORIZON' } });
      expect(planStart(undefined, 'LATEST')).to.deep.equal({ iteratorStart: { type: 'LATEST' }, startingPosition: { type: 'LATEST' } });
      const timestamp = new Date('2025-06-01T00:00:00Z');
      expect(planStart(undefined, { timestamp })).to.deep.equal({
        iteratorStart: { type: 'AT_TIMESTAMP', timestamp }, startingPosition: { type: 'AT_TIMESTAMP', timestamp },
      });
    });
  });

  describe('startAfter / planResume: rebuilding an iterator', () => {
    it('after a plain record, or the last sub-record of an aggregate: AFTER its sequence number, nothing to skip', () => {
      expect(startAfter({ sequenceNumber: SEQ }, true)).to.deep.equal({ iteratorStart: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ } });
      expect(startAfter({ sequenceNumber: SEQ, subSequenceNumber: 99 }, true)).to.deep.equal({ iteratorStart: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ } });
    });

    it('after a sub-record in the middle of an aggregate: AT the aggregate, skipping through it', () => {
      expect(startAfter({ sequenceNumber: SEQ, subSequenceNumber: 7 }, false)).to.deep.equal({
        iteratorStart: { type: 'AT_SEQUENCE_NUMBER', sequenceNumber: SEQ },
        skipThrough: { sequenceNumber: SEQ, subSequenceNumber: 7 },
      });
    });

    it('after a delivery: from the last delivered record', () => {
      const origin = { iteratorStart: { type: 'TRIM_HORIZON' as const } };
      expect(planResume(origin, { position: { sequenceNumber: SEQ }, aggregateDone: true }, new Date(0))).to.deep.equal({
        iteratorStart: { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ },
      });
    });

    it('before any delivery: the original start, with its skip', () => {
      const origin = { iteratorStart: { type: 'AT_SEQUENCE_NUMBER' as const, sequenceNumber: SEQ }, skipThrough: { sequenceNumber: SEQ, subSequenceNumber: 3 } };
      expect(planResume(origin, undefined, new Date(5))).to.equal(origin);
    });

    it('a LATEST start that delivered nothing resumes AT_TIMESTAMP of where it started (the stream\'s clock at its first iterator), so nothing that arrived since is skipped', () => {
      const started = new Date('2025-06-01T12:00:00Z');
      expect(planResume({ iteratorStart: { type: 'LATEST' } }, undefined, started)).to.deep.equal({
        iteratorStart: { type: 'AT_TIMESTAMP', timestamp: started },
      });
      expect(planResume({ iteratorStart: { type: 'LATEST' } }, undefined, undefined), 'no iterator yet').to.deep.equal({ iteratorStart: { type: 'LATEST' } });
    });
  });

  describe('startToKeep: the start a lease stores until its first ack', () => {
    it('LATEST: AT_TIMESTAMP of the capture, five minutes early (a client clock up to that far ahead still names a time before the real start)', () => {
      expect(START_SKEW_MARGIN_MS).to.equal(300_000);
      const now = Date.parse('2025-06-01T12:00:00Z');
      expect(startToKeep({ type: 'LATEST' }, now)).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date('2025-06-01T11:55:00Z') });
    });

    it('a timestamp is kept as it is; TRIM_HORIZON and sequence numbers need nothing kept', () => {
      const timestamp = new Date('2025-01-01T00:00:00Z');
      expect(startToKeep({ type: 'AT_TIMESTAMP', timestamp }, 0)).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp });
      expect(startToKeep({ type: 'TRIM_HORIZON' }, 0)).to.equal(undefined);
      expect(startToKeep({ type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ }, 0)).to.equal(undefined);
      expect(startToKeep({ type: 'AT_SEQUENCE_NUMBER', sequenceNumber: SEQ }, 0)).to.equal(undefined);
    });
  });

  describe('isSkipped', () => {
    it('skips sub-records at or before the checkpointed one, not after, and compares sequence numbers as numbers', () => {
      const skip = { sequenceNumber: SEQ, subSequenceNumber: 4 };
      expect(isSkipped({ sequenceNumber: SEQ, subSequenceNumber: 4 }, skip)).to.equal(true);
      expect(isSkipped({ sequenceNumber: SEQ, subSequenceNumber: 5 }, skip)).to.equal(false);
      // A plain record at the same number stands for the whole aggregate: it is after every sub-record.
      expect(isSkipped({ sequenceNumber: SEQ }, skip)).to.equal(false);
      expect(isSkipped({ sequenceNumber: '9', subSequenceNumber: 0 }, { sequenceNumber: '10', subSequenceNumber: 0 })).to.equal(true);
      expect(isSkipped({ sequenceNumber: SEQ }, undefined)).to.equal(false);
    });
  });

  describe('inheritedStart (a child shard with no checkpoint of its own)', () => {
    const at = (ms: number) => ({ checkpoint: { type: 'AT_TIMESTAMP' as const, timestamp: new Date(ms) } });
    it('a parent read from a record or from the oldest record: the child from its beginning', () => {
      expect(inheritedStart([{ checkpoint: { type: 'position', position: { sequenceNumber: SEQ } } }])).to.deep.equal({ type: 'TRIM_HORIZON' });
      expect(inheritedStart([at(5), { checkpoint: { type: 'TRIM_HORIZON' } }])).to.deep.equal({ type: 'TRIM_HORIZON' });
    });
    it('parents that kept only a start time: the child starts at the earliest of them', () => {
      expect(inheritedStart([at(9_000), at(4_000)])).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(4_000) });
    });
    it('nothing known (no checkpoint, a bare LATEST): the initialPosition option decides', () => {
      expect(inheritedStart([])).to.equal(undefined);
      expect(inheritedStart([{ checkpoint: undefined }, { checkpoint: { type: 'LATEST' } }])).to.equal(undefined);
    });
    it('R15: a parent reset to LATEST stands for the reset\'s moment (or the later start it replaced): the child starts there, without the parent\'s floor', () => {
      const resetAt = new Date(9_000_000);
      const reset = { checkpoint: { type: 'LATEST' as const, after: { sequenceNumber: SEQ }, notBefore: resetAt, resetAt } };
      expect(inheritedStart([reset])).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: resetAt });
      expect(inheritedStart([reset, at(4_000)]), 'a merge: the earliest').to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(4_000) });
      expect(inheritedStart([{ checkpoint: { type: 'LATEST', notBefore: new Date(9_500_000), resetAt } }])).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(9_500_000) });
    });
  });

  describe('startOf: the start a stored checkpoint stands for (the one rule)', () => {
    it('a reset\'s LATEST is AT_TIMESTAMP of its time floor, with its floor; everything else stands for itself', () => {
      const position = { sequenceNumber: SEQ };
      const resetAt = new Date(9_000_000);
      expect(startOf({ type: 'LATEST', after: position, notBefore: resetAt, resetAt })).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: resetAt, after: position });
      expect(startOf({ type: 'LATEST', notBefore: new Date(9_500_000), resetAt })).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(9_500_000) });
      expect(startOf({ type: 'LATEST', resetAt }), 'a moment without a floor in time').to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: resetAt });
      for (const itself of [
        { type: 'LATEST', after: position, notBefore: resetAt }, { type: 'LATEST' }, { type: 'TRIM_HORIZON' },
        { type: 'AT_TIMESTAMP', timestamp: resetAt, after: position }, { type: 'position', position },
      ] as const) expect(startOf(itself)).to.equal(itself);
    });
    it('startingPositionOf: the public face of that start, without the floors only the reader uses', () => {
      const position = { sequenceNumber: SEQ };
      const resetAt = new Date(9_000_000);
      expect(startingPositionOf({ type: 'LATEST', after: position, notBefore: resetAt, resetAt })).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: resetAt });
      expect(startingPositionOf({ type: 'LATEST', after: position, notBefore: resetAt })).to.deep.equal({ type: 'LATEST' });
      expect(startingPositionOf({ type: 'AT_TIMESTAMP', timestamp: resetAt, after: position })).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: resetAt });
      expect(startingPositionOf({ type: 'position', position: { sequenceNumber: SEQ, subSequenceNumber: 2 } })).to.deep.equal({ type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: SEQ, subSequenceNumber: 2 });
    });
  });

  describe('withResetFloor and the floor of a start', () => {
    const position = { sequenceNumber: SEQ };
    it('a reset to LATEST keeps the replaced position (or the floor it had) as its floor; other resets have none', () => {
      expect(withResetFloor({ type: 'LATEST' }, { type: 'position', position })).to.deep.equal({ type: 'LATEST', after: position });
      expect(withResetFloor({ type: 'LATEST' }, { type: 'AT_TIMESTAMP', timestamp: new Date(1), after: position })).to.deep.equal({ type: 'LATEST', after: position, notBefore: new Date(1) });
      expect(withResetFloor({ type: 'LATEST' }, undefined)).to.deep.equal({ type: 'LATEST' });
      expect(withResetFloor({ type: 'TRIM_HORIZON' }, { type: 'position', position })).to.deep.equal({ type: 'TRIM_HORIZON' });
    });
    it('R12: a reset to LATEST has its own moment as a time floor, or the replaced start time when that is later', () => {
      const resetAt = new Date(9_000_000);
      expect(withResetFloor({ type: 'LATEST' }, { type: 'position', position }, resetAt)).to.deep.equal({ type: 'LATEST', after: position, notBefore: resetAt, resetAt });
      expect(withResetFloor({ type: 'LATEST' }, undefined, resetAt)).to.deep.equal({ type: 'LATEST', notBefore: resetAt, resetAt });
      expect(withResetFloor({ type: 'LATEST' }, { type: 'AT_TIMESTAMP', timestamp: new Date(1) }, resetAt)).to.deep.equal({ type: 'LATEST', notBefore: resetAt, resetAt });
      expect(withResetFloor({ type: 'LATEST' }, { type: 'AT_TIMESTAMP', timestamp: new Date(9_500_000) }, resetAt), 'a later replaced start time wins')
        .to.deep.equal({ type: 'LATEST', notBefore: new Date(9_500_000), resetAt });
      expect(withResetFloor({ type: 'AT_TIMESTAMP', timestamp: new Date(5) }, undefined, resetAt)).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(5) });
    });
    it('R12 (design §8.3): a reset to LATEST starts at its moment (or the later start time it replaced), keeping its floor; a LATEST without a moment (older rows) at the tip', () => {
      const resetAt = new Date(9_000_000);
      expect(planStart({ type: 'LATEST', after: position, notBefore: resetAt, resetAt }, 'TRIM_HORIZON')).to.deep.equal({
        iteratorStart: { type: 'AT_TIMESTAMP', timestamp: resetAt },
        startingPosition: { type: 'AT_TIMESTAMP', timestamp: resetAt },
        skipThrough: position,
      });
      expect(planStart({ type: 'LATEST', notBefore: new Date(9_500_000), resetAt }, 'TRIM_HORIZON').iteratorStart).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(9_500_000) });
      expect(planStart({ type: 'LATEST', notBefore: resetAt }, 'TRIM_HORIZON').iteratorStart).to.deep.equal({ type: 'LATEST' });
    });
    it('a start with a floor skips through it, and keeps it when it is kept as a timestamp', () => {
      expect(planStart({ type: 'LATEST', after: position }, 'TRIM_HORIZON').skipThrough).to.deep.equal(position);
      expect(planStart({ type: 'AT_TIMESTAMP', timestamp: new Date(5), after: position }, 'TRIM_HORIZON').skipThrough).to.deep.equal(position);
      expect(startToKeep({ type: 'LATEST' }, 1_000_000, position)).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(1_000_000 - START_SKEW_MARGIN_MS), after: position });
    });
    it('a replaced start time is a floor in time: the start kept from a LATEST is never earlier (simulator seed 1164)', () => {
      const at = new Date(7_000_000);
      expect(withResetFloor({ type: 'LATEST' }, { type: 'AT_TIMESTAMP', timestamp: at })).to.deep.equal({ type: 'LATEST', notBefore: at });
      expect(withResetFloor({ type: 'LATEST' }, { type: 'LATEST', notBefore: at })).to.deep.equal({ type: 'LATEST', notBefore: at });
      expect(withResetFloor({ type: 'AT_TIMESTAMP', timestamp: new Date(9) }, { type: 'AT_TIMESTAMP', timestamp: at })).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(9) });
      const plan = planStart({ type: 'LATEST', notBefore: at }, 'TRIM_HORIZON');
      expect(plan.iteratorStart).to.deep.equal({ type: 'LATEST' });
      // The floor wins over the five-minute margin when it is later, and not otherwise.
      expect(startToKeep(plan.iteratorStart, 7_000_000 + 60_000, undefined, plan.notBefore)).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: at });
      expect(startToKeep(plan.iteratorStart, 7_000_000 + START_SKEW_MARGIN_MS + 1, undefined, plan.notBefore)).to.deep.equal({ type: 'AT_TIMESTAMP', timestamp: new Date(7_000_001) });
    });
  });
});
