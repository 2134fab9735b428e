import { expect } from 'chai';
import { firstValueFrom, timer } from 'rxjs';
import { SteppedScheduler } from './stepped-scheduler.js';

describe('SteppedScheduler (test support)', () => {
  it('interleaves timers with the promise continuations they trigger', async () => {
    const scheduler = new SteppedScheduler(0);
    const log: string[] = [];
    const flow = (async () => {
      await firstValueFrom(timer(100, scheduler));
      log.push(`a@${scheduler.now()}`);
      await firstValueFrom(timer(50, scheduler));
      log.push(`b@${scheduler.now()}`);
    })();
    await scheduler.advanceTo(120);
    expect(log).to.deep.equal(['a@100']);
    await scheduler.advanceTo(200);
    await flow;
    expect(log).to.deep.equal(['a@100', 'b@150']);
    expect(scheduler.now()).to.equal(200);
  });

  it('until() reports how much virtual time a condition took, and fails past its limit', async () => {
    const scheduler = new SteppedScheduler(0);
    let done = false;
    timer(300, scheduler).subscribe(() => { done = true; });
    expect(await scheduler.until(() => done, 'the timer', 1000, 100)).to.equal(300);
    const error = await scheduler.until(() => false, 'never', 200).catch((e: unknown) => e);
    expect((error as Error).message).to.contain('still waiting for never');
  });
});
