import { createTables } from '../../src/dynamodb/tables.js';
import { Dynamo } from '../../src/dynamodb/dynamo.js';
import { DynamoMembershipStore } from '../../src/dynamodb/membership-store.js';
import { DynamoMetadataStore } from '../../src/dynamodb/metadata-store.js';
import { tableNames } from '../../src/dynamodb/table-names.js';
import { startLocalAws, type LocalAws } from '../../src/testing/index.js';
import { membershipSpec, metadataSpec, type SpecHarness } from '../support/coordination-spec.js';
import { uniqueName } from '../support/local.js';
import { TIERS, skipUnless } from '../support/tiers.js';

// The coordination stores on each tier of local DynamoDB: the same behavioural spec the in-memory
// stores pass (test/unit/testing/memory-coordination.test.ts), so the fakes and DynamoDB cannot drift apart.
for (const tier of TIERS) {
  describe(`conformance: coordination stores on ${tier.name}`, function () {
    this.timeout(180_000);
    skipUnless(tier);
    let local: LocalAws;
    before(async () => { local = await startLocalAws(tier.options); });
    after(async () => { await local?.stop(); });

    const harness: SpecHarness = async () => {
      const app = uniqueName('coord');
      await createTables({ dynamodb: local.dynamodb, applicationName: app });
      const dynamo = new Dynamo(local.dynamodb);
      const tables = tableNames(app);
      return {
        membership: (options) => new DynamoMembershipStore({ ...options, dynamo, table: tables.clients }),
        metadata: (options) => new DynamoMetadataStore({ ...options, dynamo, table: tables.metadata }),
      };
    };
    membershipSpec(harness);
    metadataSpec(harness);
  });
}
