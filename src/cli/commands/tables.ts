import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { firstValueFrom } from 'rxjs';
import { Dynamo } from '../../dynamodb/dynamo.js';
import { tableNames } from '../../dynamodb/table-names.js';
import { createTables, deleteTables } from '../../dynamodb/tables.js';
import { classifyAwsError } from '../../errors/aws-error-kind.js';
import { clientSettings, dynamodbClient } from '../clients.js';
import { EXIT, type CommonOption, type Command } from '../command.js';

/** The tables commands touch DynamoDB only. */
const DYNAMODB_OPTIONS: readonly CommonOption[] = ['app', 'region', 'endpoint', 'dynamodb-endpoint', 'profile'];

/** `false` when DescribeTable says the table does not exist; other errors are errors. */
export async function tableExists(dynamodb: DynamoDBClient, table: string): Promise<boolean> {
  try {
    await firstValueFrom(new Dynamo(dynamodb).describeTable(table));
    return true;
  } catch (error) {
    if (classifyAwsError(error) === 'not-found') return false;
    throw error;
  }
}

/** What delete-tables did, in one line: which tables it deleted and which were not there. */
function deletedText(deleted: readonly string[], absent: readonly string[]): string {
  if (deleted.length === 0) return `no tables to delete: ${absent.join(', ')} do not exist`;
  return `tables deleted: ${deleted.join(', ')}${absent.length === 0 ? '' : `; already absent: ${absent.join(', ')}`}`;
}

export const createTablesCommand: Command = {
  name: 'create-tables',
  summary: 'create the application\'s three DynamoDB tables (idempotent)',
  usage: 'kinsumer create-tables --app <name> [--billing-mode PAY_PER_REQUEST|PROVISIONED] [--read-capacity N] [--write-capacity N]',
  options: {
    'billing-mode': { type: 'string' },
    'read-capacity': { type: 'string' },
    'write-capacity': { type: 'string' },
  },
  optionHelp: {
    'billing-mode': 'PAY_PER_REQUEST (default) or PROVISIONED',
    'read-capacity': 'provisioned read capacity per table (default 10)',
    'write-capacity': 'provisioned write capacity per table (default 10)',
  },
  commonOptions: DYNAMODB_OPTIONS,
  exitCodes: {
    [EXIT.ok]: 'the three tables exist and are ACTIVE',
    [EXIT.failure]: 'DynamoDB failed or could not be reached',
    [EXIT.usage]: 'bad command line',
  },
  required: ['app'],
  async run(values, io) {
    const app = String(values.app);
    const dynamodb = dynamodbClient(clientSettings(values));
    try {
      const number = (name: string) => (typeof values[name] === 'string' ? Number(values[name]) : undefined);
      const billingMode = values['billing-mode'];
      const readCapacity = number('read-capacity');
      const writeCapacity = number('write-capacity');
      await createTables({
        dynamodb, applicationName: app,
        ...(typeof billingMode === 'string' ? { billingMode: billingMode as 'PAY_PER_REQUEST' } : {}),
        ...(readCapacity === undefined ? {} : { readCapacity }),
        ...(writeCapacity === undefined ? {} : { writeCapacity }),
      });
      const names = tableNames(app);
      io.stdout.write(`tables ready: ${names.clients}, ${names.checkpoints}, ${names.metadata}\n`);
      return EXIT.ok;
    } finally {
      dynamodb.destroy();
    }
  },
};

export const deleteTablesCommand: Command = {
  name: 'delete-tables',
  summary: 'delete the application\'s three DynamoDB tables (idempotent; checkpoints are lost)',
  usage: 'kinsumer delete-tables --app <name>',
  options: {},
  optionHelp: {},
  commonOptions: DYNAMODB_OPTIONS,
  exitCodes: {
    [EXIT.ok]: 'the three tables are gone (deleted now, or already absent)',
    [EXIT.failure]: 'DynamoDB failed or could not be reached',
    [EXIT.usage]: 'bad command line',
  },
  required: ['app'],
  async run(values, io) {
    const app = String(values.app);
    const dynamodb = dynamodbClient(clientSettings(values));
    try {
      const names = Object.values(tableNames(app));
      // Asked first, so the message tells the truth on a second run; deleteTables itself is idempotent.
      const present = await Promise.all(names.map((table) => tableExists(dynamodb, table)));
      await deleteTables({ dynamodb, applicationName: app });
      io.stdout.write(`${deletedText(names.filter((_, i) => present[i]), names.filter((_, i) => !present[i]))}\n`);
      return EXIT.ok;
    } finally {
      dynamodb.destroy();
    }
  },
};
