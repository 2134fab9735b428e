'use strict';
// Spec output while the run goes, then one plain closing line that CI reads:
// "N passed, N failed". Pending tests are reported on their own line above it,
// so a skipped check is visible and never counted as passed.
const Mocha = require('mocha');

const { Spec } = Mocha.reporters;
const { EVENT_RUN_END, EVENT_TEST_PASS, EVENT_TEST_FAIL, EVENT_TEST_PENDING } = Mocha.Runner.constants;

class SummaryReporter extends Spec {
  constructor(runner, options) {
    super(runner, options);
    let passed = 0;
    let failed = 0;
    let pending = 0;
    runner.on(EVENT_TEST_PASS, () => { passed += 1; });
    runner.on(EVENT_TEST_FAIL, () => { failed += 1; });
    runner.on(EVENT_TEST_PENDING, () => { pending += 1; });
    runner.once(EVENT_RUN_END, () => {
      // Spec registered its epilogue on this event first (in super()), so this prints after it.
      // Synchronously: with --exit, mocha ends the process right after the run.
      if (pending > 0) process.stdout.write(`${pending} skipped\n`);
      process.stdout.write(`${passed} passed, ${failed} failed\n`);
    });
  }
}

module.exports = SummaryReporter;
