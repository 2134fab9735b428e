import type { LocalAwsOptions } from '../../src/testing/index.js';
import { javaAvailable } from '../../src/testing/servers.js';

/** A pair of local servers a conformance suite runs against. */
export interface Tier {
  readonly name: string;
  readonly options: Required<Pick<LocalAwsOptions, 'kinesis' | 'dynamodb'>>;
  /** Resolves to a reason when this machine cannot run the tier (printed as the skip reason). */
  readonly unavailable: () => Promise<string | undefined>;
}

export const TIERS: readonly Tier[] = [
  {
    name: 'kinesalite + dynalite',
    options: { kinesis: 'kinesalite', dynamodb: 'dynalite' },
    unavailable: () => Promise.resolve(undefined),
  },
  {
    name: 'kinesis-local + DynamoDB Local',
    options: { kinesis: 'kinesis-local', dynamodb: 'dynamodb-local' },
    unavailable: async () => ((await javaAvailable()) ? undefined : 'no Java runtime on this machine: DynamoDB Local needs Java 17+'),
  },
];

/** Skips the enclosing describe block, printing why, when its tier cannot run here. */
export function skipUnless(tier: Tier): void {
  before(async function () {
    const reason = await tier.unavailable();
    if (reason !== undefined) {
      console.log(`      skipped ${tier.name}: ${reason}`);
      this.skip();
    }
  });
}
