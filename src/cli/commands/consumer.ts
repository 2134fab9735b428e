// `kinsumer deregister-consumer`: a registered enhanced fan-out consumer is billed by the hour
// whether or not anything reads through it, and the library registers one but never removes it
// (another process of the group may still be reading).
import { firstValueFrom } from 'rxjs';
import { checkApplicationName } from '../../dynamodb/table-names.js';
import { KinesisStream } from '../../kinesis/kinesis.js';
import { type StreamRef } from '../../options.js';
import { clientSettings, kinesisClient } from '../clients.js';
import { EXIT, type Command, type OptionValues, UsageError } from '../command.js';

const CONSUMER_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

function text(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The stream, by name or ARN. */
function streamOf(values: OptionValues): StreamRef {
  const stream = text(values, 'stream');
  if (stream === undefined) throw new UsageError('missing --stream');
  return stream.startsWith('arn:') ? { streamArn: stream } : { streamName: stream };
}

/** `--consumer-name`, else the library's default for `--app` (the application name). */
function consumerNameOf(values: OptionValues): string {
  const given = text(values, 'consumer-name');
  if (given !== undefined) {
    if (!CONSUMER_NAME.test(given)) throw new UsageError('--consumer-name must be 1-128 characters of A-Z a-z 0-9 _ . -');
    return given;
  }
  const app = text(values, 'app');
  if (app === undefined) throw new UsageError('give --consumer-name, or --app (the consumer is named after the application by default)');
  return checkApplicationName(app).slice(0, 128);
}

export const deregisterConsumerCommand: Command = {
  name: 'deregister-consumer',
  summary: 'deregister the stream\'s enhanced fan-out consumer (billed while registered, even idle); stop the readers first',
  usage: 'kinsumer deregister-consumer --stream <name|arn> (--consumer-name <name> | --app <name>)',
  options: { 'consumer-name': { type: 'string' } },
  optionHelp: { 'consumer-name': 'the consumer to deregister (default: the --app name, as readMode \'fan-out\' names it)' },
  commonOptions: ['stream', 'app', 'region', 'endpoint', 'kinesis-endpoint', 'profile'],
  exitCodes: {
    [EXIT.ok]: 'the consumer is deregistered (or was not registered)',
    [EXIT.failure]: 'the stream was not found, the server has no enhanced fan-out, or Kinesis failed',
    [EXIT.usage]: 'bad command line',
  },
  required: ['stream'],
  async run(values, io) {
    const stream = streamOf(values);
    const consumerName = consumerNameOf(values);
    const kinesis = kinesisClient(clientSettings(values));
    try {
      const { fanOut, streamLabel } = new KinesisStream(kinesis, stream);
      const found = await firstValueFrom(fanOut.describeConsumer(consumerName));
      if (found === undefined) {
        io.stdout.write(`no consumer ${consumerName} on stream ${streamLabel}: nothing to deregister\n`);
        return EXIT.ok;
      }
      await firstValueFrom(fanOut.deregisterConsumer(consumerName), { defaultValue: undefined });
      io.stdout.write(`consumer ${consumerName} deregistered from stream ${streamLabel} (${found.consumerArn}, was ${found.status})\n`);
      return EXIT.ok;
    } finally {
      kinesis.destroy();
    }
  },
};
