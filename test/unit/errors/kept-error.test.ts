import { expect } from 'chai';
import { keepable } from '../../../src/errors/kept-error.js';
import { collectGarbage } from '../../sim/memory-probe.js';

// Found by the simulator (seed 49 of every kind of issue 32, retained-memory): status().lastError
// kept an error whose unformatted stack held the frames' closures, and through them a batch of
// records of a lease long lost. A real collection, so a real V8: the test reads what stays reachable.
describe('an error kept for status() (keepable)', () => {
  /** An error thrown inside a closure over `records`, as an operator's handler call throws one. */
  function failureOver(records: object[]): { error: Error; cause: Error } {
    const cause = (() => {
      const held = records;
      try {
        (() => { if (held.length > 0) throw new Error('handler failed'); })();
      } catch (error) {
        return error as Error;
      }
      return new Error('unreachable');
    })();
    return { error: new Error('batch failed', { cause }), cause };
  }

  it('holds no frame of the moment it was thrown: what the frames saw is garbage once dropped', async function () {
    if (!collectGarbage()) this.skip();
    let records: object[] | undefined = [{ data: 'x'.repeat(1000) }];
    const watched = new WeakRef(records[0] as object);
    const kept = keepable(failureOver(records).error);
    records = undefined;
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    expect(watched.deref(), 'a record the throwing frame closed over').to.equal(undefined);
    expect(kept.stack).to.match(/^Error: batch failed/);
    expect((kept.cause as Error).stack).to.match(/^Error: handler failed/);
  });

  it('an error kept as it is keeps them reachable (what the test above guards against)', async function () {
    if (!collectGarbage()) this.skip();
    let records: object[] | undefined = [{ data: 'x'.repeat(1000) }];
    const watched = new WeakRef(records[0] as object);
    const kept = failureOver(records).error;
    records = undefined;
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    expect(watched.deref(), 'V8 keeps the frames of an unformatted stack').to.not.equal(undefined);
    expect(kept.message).to.equal('batch failed');
  });
});
