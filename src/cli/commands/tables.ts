import { createTables, deleteTables } from '../../dynamodb/tables.js';
import { tableNames } from '../../options.js';
import { clientSettings, dynamodbClient } from '../clients.js';
import { EXIT, type Command } from '../command.js';

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
  required: ['app'],
  async run(values, io) {
    const app = String(values.app);
    const dynamodb = dynamodbClient(clientSettings(values));
    try {
      await deleteTables({ dynamodb, applicationName: app });
      const names = tableNames(app);
      io.stdout.write(`tables deleted: ${names.clients}, ${names.checkpoints}, ${names.metadata}\n`);
      return EXIT.ok;
    } finally {
      dynamodb.destroy();
    }
  },
};
