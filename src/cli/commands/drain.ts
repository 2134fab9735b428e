// `kinsumer drain --app <name> --client <id> [--undo] [--wait]`: asks a member of the group to drain
// (design §9.3): it hands every lease over gracefully, takes none, stays registered as draining
// (`kinsumer status`), and its stop() is then immediate — for deploys and retiring an instance. The
// command marks the member's clients row; the member sees it at its next heartbeat (at most a
// third of leaseTtlMs later). `--undo` removes the mark: the member takes shards again. `--wait`
// follows the member's row until it holds nothing (or `--timeout-ms` runs out).
import { firstValueFrom } from 'rxjs';
import { decodeClientRow } from '../../dynamodb/client-row.js';
import { Dynamo } from '../../dynamodb/dynamo.js';
import { requestDrain } from '../../dynamodb/drain-request.js';
import { tableNames } from '../../dynamodb/table-names.js';
import { clientSettings, dynamodbClient } from '../clients.js';
import { EXIT, UsageError, type Command } from '../command.js';
import { applicationOption, integerOption, textOption } from '../common-options.js';

/** How often `--wait` reads the member's row. */
const WAIT_POLL_MS = 1000;

export const drainCommand: Command = {
  name: 'drain',
  summary: 'ask a member to hand its leases over and take none (--undo: take shards again)',
  usage: 'kinsumer drain --app <name> --client <clientId> [--undo] [--wait [--timeout-ms N]]',
  options: {
    client: { type: 'string' },
    undo: { type: 'boolean' },
    wait: { type: 'boolean' },
    'timeout-ms': { type: 'string' },
  },
  optionHelp: {
    client: 'the member\'s clientId (as `kinsumer status` lists it)',
    undo: 'remove the request: the member takes shards again',
    wait: 'wait until the member holds no lease (it stays registered, draining)',
    'timeout-ms': 'with --wait: give up after this long (default 120000)',
  },
  commonOptions: ['app', 'region', 'endpoint', 'dynamodb-endpoint', 'profile'],
  exitCodes: {
    [EXIT.ok]: 'the member was asked (with --wait: and holds no lease)',
    [EXIT.failure]: 'DynamoDB failed, a table is missing, or --wait ran out of time',
    [EXIT.usage]: 'bad command line',
    [EXIT.refused]: 'no member of the group has that clientId',
  },
  required: ['app', 'client'],
  async run(values, io) {
    const app = applicationOption(values);
    const clientId = textOption(values, 'client');
    if (clientId === undefined || clientId === '') throw new UsageError('missing --client');
    const undo = values.undo === true;
    if (undo && values.wait === true) throw new UsageError('--wait goes with a drain, not with --undo');
    const timeoutMs = integerOption(values, 'timeout-ms', 120_000);
    const dynamodb = dynamodbClient(clientSettings(values));
    const dynamo = new Dynamo(dynamodb);
    const tables = tableNames(app);
    try {
      const row = await firstValueFrom(requestDrain(dynamo, tables, clientId, undo, Date.now()), { defaultValue: undefined });
      if (row === undefined) {
        io.stderr.write(`kinsumer drain: app ${app} has no member ${clientId} (see kinsumer status)\n`);
        return EXIT.refused;
      }
      if (undo) {
        io.stdout.write(`${clientId}: drain request removed; it takes shards again after its next heartbeat\n`);
        return EXIT.ok;
      }
      io.stdout.write(`${clientId}: asked to drain; it hands its ${row.shardIds?.length ?? 0} lease(s) over from its next heartbeat on\n`);
      if (values.wait !== true) return EXIT.ok;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const item = await firstValueFrom(dynamo.getItem({ TableName: tables.clients, Key: { ID: { S: clientId } }, ConsistentRead: true }));
        const now = item === undefined ? undefined : decodeClientRow(item);
        if (now === undefined) {
          io.stdout.write(`${clientId}: left the group\n`);
          return EXIT.ok;
        }
        if (now.draining === true && (now.shardIds?.length ?? 0) === 0) {
          io.stdout.write(`${clientId}: drained (holds no lease)\n`);
          return EXIT.ok;
        }
        if (Date.now() >= deadline) {
          io.stderr.write(`kinsumer drain: ${clientId} still holds ${now.shardIds?.length ?? 0} lease(s) after ${timeoutMs} ms\n`);
          return EXIT.failure;
        }
        await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
      }
    } finally {
      dynamodb.destroy();
    }
  },
};
