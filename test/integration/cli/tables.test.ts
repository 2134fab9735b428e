import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { expect } from 'chai';
import { cli } from '../../support/cli.js';
import { uniqueName, useLocalAws } from '../../support/local.js';

describe('CLI: help, usage errors, exit codes', () => {
  it('prints the command list for --help (exit 0) and for no command (exit 2)', async () => {
    const help = await cli(['--help']);
    expect(help.code).to.equal(0);
    expect(help.stdout).to.match(/^Usage: kinsumer <command> \[options\]/);
    for (const name of ['create-tables', 'delete-tables']) expect(help.stdout).to.contain(`  ${name} `);
    expect((await cli([])).code).to.equal(2);
  });

  it('prints each command\'s options for <command> --help', async () => {
    const help = await cli(['create-tables', '--help']);
    expect(help.code).to.equal(0);
    expect(help.stdout).to.contain('Usage: kinsumer create-tables --app <name>');
    for (const option of ['--app', '--endpoint', '--region', '--profile', '--billing-mode']) expect(help.stdout).to.contain(option);
  });

  it('refuses an unknown command, an unknown option and a missing required option with exit 2', async () => {
    const unknown = await cli(['frobnicate']);
    expect([unknown.code, unknown.stderr]).to.satisfy(([code, text]: [number, string]) => code === 2 && text.includes("unknown command 'frobnicate'"));
    const badOption = await cli(['create-tables', '--app', 'x', '--colour', 'red']);
    expect(badOption.code).to.equal(2);
    expect(badOption.stderr).to.contain('--colour');
    const missing = await cli(['delete-tables']);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.contain('missing --app');
  });

  it('runs as the installed bin (a separate process)', async () => {
    const { stdout } = await promisify(execFile)('npx', ['--no-install', 'tsx', 'src/cli/main.ts', '--help']);
    expect(stdout).to.contain('Usage: kinsumer <command>');
  });
});

describe('CLI: create-tables / delete-tables (dynalite)', () => {
  const local = useLocalAws();

  it('creates the tables (twice: idempotent) and deletes them', async () => {
    const app = uniqueName('cli');
    const endpoint = local().endpoints.dynamodb;
    for (let i = 0; i < 2; i += 1) {
      const created = await cli(['create-tables', '--app', app, '--endpoint', endpoint]);
      expect(created.code, created.stderr).to.equal(0);
      expect(created.stdout).to.contain(`${app}_checkpoints`);
    }
    const table = await local().dynamodb.send(new DescribeTableCommand({ TableName: `${app}_metadata` }));
    expect(table.Table?.KeySchema).to.deep.equal([{ AttributeName: 'Key', KeyType: 'HASH' }]);
    const deleted = await cli(['delete-tables', '--app', app, '--endpoint', endpoint]);
    expect(deleted.code, deleted.stderr).to.equal(0);
    const gone = await local().dynamodb.send(new DescribeTableCommand({ TableName: `${app}_metadata` })).catch((e: unknown) => e);
    expect((gone as Error).name).to.equal('ResourceNotFoundException');
  });

  it('delete-tables on tables that do not exist says so, with exit 0 (idempotent); on some, names which were deleted', async () => {
    const app = uniqueName('cli-absent');
    const endpoint = local().endpoints.dynamodb;
    const none = await cli(['delete-tables', '--app', app, '--endpoint', endpoint]);
    expect([none.code, none.stdout, none.stderr]).to.deep.equal([0, `no tables to delete: ${app}_clients, ${app}_checkpoints, ${app}_metadata do not exist\n`, '']);
    await local().dynamodb.send(new CreateTableCommand({
      TableName: `${app}_metadata`, BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'Key', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'Key', KeyType: 'HASH' }],
    }));
    const some = await cli(['delete-tables', '--app', app, '--endpoint', endpoint]);
    expect([some.code, some.stdout]).to.deep.equal([0, `tables deleted: ${app}_metadata; already absent: ${app}_clients, ${app}_checkpoints\n`]);
  });

  it('creates provisioned tables with the given capacities', async () => {
    const app = uniqueName('cli-prov');
    const result = await cli(['create-tables', '--app', app, '--endpoint', local().endpoints.dynamodb, '--billing-mode', 'PROVISIONED', '--read-capacity', '4', '--write-capacity', '5']);
    expect(result.code, result.stderr).to.equal(0);
    const table = await local().dynamodb.send(new DescribeTableCommand({ TableName: `${app}_clients` }));
    expect(table.Table?.ProvisionedThroughput?.WriteCapacityUnits).to.equal(5);
  });

  it('reports a bad option value with exit 2 and a failure to reach DynamoDB with exit 1', async () => {
    const bad = await cli(['create-tables', '--app', 'x', '--endpoint', local().endpoints.dynamodb, '--billing-mode', 'FREE']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('billingMode');
    // A closed port: connection refused, after the SDK's own retries.
    const down = await cli(['delete-tables', '--app', 'x', '--endpoint', 'http://127.0.0.1:9']);
    expect(down.code).to.equal(1);
    expect(down.stderr).to.match(/kinsumer delete-tables: /);
  });
});
