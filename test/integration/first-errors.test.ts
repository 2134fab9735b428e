import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { NodeHttp2Handler } from '@smithy/node-http-handler';
import { expect } from 'chai';
import { filter, firstValueFrom, take, toArray } from 'rxjs';
import { EndpointError, Kinsumer, KinsumerError, createTables, type KinsumerEvent } from '../../src/index.js';
import { Dynamo } from '../../src/dynamodb/dynamo.js';
import { createStream, putRecords } from '../../src/testing/index.js';
import { startDynalite } from '../../src/testing/servers.js';
import { cli } from '../support/cli.js';
import { BARE_AWS_ENV, withEnv } from '../support/env.js';
import { uniqueName, useLocalAws } from '../support/local.js';
import { QUIET } from '../support/memory-group.js';

/** A port nothing listens on: bound once by this process, then closed. */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** A web server where an AWS endpoint was expected: every request gets a small HTML page. */
async function htmlServer(): Promise<{ url: string; server: Server }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end('<!doctype html><html><body>It works!</body></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

type Retrying = Extract<KinsumerEvent, { type: 'retrying' }>;

/** The error and its causes, outermost first. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e: unknown = error; e !== undefined && chain.length < 10; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

describe('first errors that explain themselves (kinesalite + dynalite)', function () {
  this.timeout(60_000);
  const local = useLocalAws();

  it('the SDK\'s default KinesisClient (HTTP/2) against kinesalite (HTTP/1.1 only): kinsumer reads on its own HTTP/1.1 connections', async () => {
    const stream = uniqueName('h2');
    const app = uniqueName('h2-app');
    await createStream(local().kinesis, stream, 1);
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    await putRecords(local().kinesis, stream, [{ partitionKey: 'k', data: 'read with a default client' }]);
    // What a newcomer writes first: the SDK's default request handler, which speaks HTTP/2 to Kinesis.
    const kinesis = new KinesisClient({ endpoint: local().endpoints.kinesis, region: local().region, credentials: local().credentials });
    const consumer = new Kinsumer({ streamName: stream, applicationName: app, kinesis, dynamodb: local().dynamodb, logger: QUIET, initialPosition: 'TRIM_HORIZON' });
    try {
      const record = await firstValueFrom(consumer.records$);
      expect(record.text()).to.equal('read with a default client');
      record.ack();
      expect(consumer.status().connections.kinesis?.opened).to.be.at.least(1);
    } finally {
      await consumer.stop();
      kinesis.destroy();
    }
  });

  it("a KinesisClient with an HTTP/2 handler of the application's own against kinesalite: an EndpointError saying what to pass, the HTTP/2 error as cause", async () => {
    const stream = uniqueName('h2');
    const app = uniqueName('h2-app');
    await createStream(local().kinesis, stream, 1);
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    // Connect options make the handler the application's: kinsumer sends through it as it is.
    const requestHandler = new NodeHttp2Handler({ nodeHttp2ConnectOptions: {} });
    const kinesis = new KinesisClient({ endpoint: local().endpoints.kinesis, region: local().region, credentials: local().credentials, requestHandler });
    const consumer = new Kinsumer({ streamName: stream, applicationName: app, kinesis, dynamodb: local().dynamodb, logger: QUIET });
    try {
      const error = await firstValueFrom(consumer.records$).then(() => undefined, (e: unknown) => e);
      expect(error).to.be.instanceOf(EndpointError);
      expect(error).to.be.instanceOf(KinsumerError);
      const endpointError = error as EndpointError;
      expect([endpointError.service, endpointError.endpoint, endpointError.retriable]).to.deep.equal(['Kinesis', local().endpoints.kinesis, false]);
      expect(endpointError.message).to.contain('HTTP/2');
      expect(endpointError.message).to.contain('new NodeHttpHandler()');
      expect(endpointError.message).to.contain('localKinesisClient');
      expect((endpointError.cause as { code?: unknown }).code).to.equal('ERR_HTTP2_ERROR');
    } finally {
      await consumer.stop();
      kinesis.destroy();
    }
  });

  it('DynamoDB refusing connections: the retrying events name DynamoDB and its endpoint (and go on)', async () => {
    const endpoint = await closedPort();
    const dynamodb = new DynamoDBClient({ endpoint, region: local().region, credentials: local().credentials, maxAttempts: 1 });
    const consumer = new Kinsumer({ streamName: 'any', applicationName: uniqueName('refused'), kinesis: local().kinesis, dynamodb, logger: QUIET });
    try {
      const retries = firstValueFrom(consumer.events$.pipe(filter((e): e is Retrying => e.type === 'retrying'), take(2), toArray()));
      consumer.records$.subscribe({ error: () => undefined });
      for (const event of await retries) {
        const found = causes(event.error).find((e) => e instanceof EndpointError);
        expect(found, 'an EndpointError in the cause chain').to.not.equal(undefined);
        expect([found?.service, found?.endpoint, found?.retriable]).to.deep.equal(['DynamoDB', endpoint, true]);
        expect(found?.message).to.equal(`cannot reach DynamoDB at ${endpoint}: connection refused (is the server running, and is this its port?)`);
      }
    } finally {
      await consumer.stop().catch(() => undefined);
      dynamodb.destroy();
    }
  });

  it('CLI: a closed port names the service and the endpoint (Kinesis for tail, DynamoDB for create-tables)', async () => {
    const endpoint = await closedPort();
    const tail = await cli(['tail', '--stream', 's', '--endpoint', endpoint]);
    expect(tail.code).to.equal(1);
    expect(tail.stderr).to.contain(`cannot reach Kinesis at ${endpoint}: connection refused`);
    const tables = await cli(['create-tables', '--app', 'a', '--endpoint', endpoint]);
    expect(tables.code).to.equal(1);
    expect(tables.stderr).to.contain(`cannot reach DynamoDB at ${endpoint}: connection refused`);
  });

  it('CLI: an endpoint answering HTML (or the other service\'s XML) says so instead of "Unexpected token \'<\'"', async () => {
    const { url, server } = await htmlServer();
    try {
      const html = await cli(['create-tables', '--app', 'a', '--endpoint', url]);
      expect(html.code).to.equal(1);
      expect(html.stderr).to.contain(`the DynamoDB endpoint ${url} answered HTTP 200 with HTML or XML, not the JSON DynamoDB sends`);
      expect(html.stderr).not.to.contain('Unexpected token');
      const tail = await cli(['tail', '--stream', 's', '--endpoint', url]);
      expect(tail.stderr).to.contain(`the Kinesis endpoint ${url} answered HTTP 200 with HTML or XML, not the JSON Kinesis sends`);
      expect(tail.stderr).not.to.contain('Unexpected token');
    } finally {
      server.close();
    }
    // The trial's mistake: DynamoDB pointed at the Kinesis server, which answers in XML.
    const stream = uniqueName('swapped');
    await createStream(local().kinesis, stream, 1);
    const swapped = await cli(['status', '--stream', stream, '--app', 'a', '--endpoint', local().endpoints.kinesis]);
    expect(swapped.code).to.equal(1);
    expect(swapped.stderr).to.contain(`the DynamoDB endpoint ${local().endpoints.kinesis} answered HTTP 404 with HTML or XML, not the JSON DynamoDB sends`);
  });

  it('CLI: deregister-consumer on kinesalite says the server has no enhanced fan-out (exit 1), not UnknownError', async () => {
    const stream = uniqueName('no-efo');
    await createStream(local().kinesis, stream, 1);
    const out = await cli(['deregister-consumer', '--stream', stream, '--consumer-name', 'c', '--endpoint', local().endpoints.kinesis]);
    expect(out.code).to.equal(1);
    expect(out.stderr).to.contain(`the Kinesis server at ${local().endpoints.kinesis} has no enhanced fan-out (DescribeStreamConsumer is not an operation it knows; kinesalite has none, kinesis-local and AWS do)`);
    expect(out.stderr).not.to.match(/: UnknownError/);
  });

  it('streamArn on kinesalite: says kinesalite takes no StreamARN and to name the stream (library and CLI), not "Either NextToken or StreamName"', async () => {
    const stream = uniqueName('by-arn');
    const app = uniqueName('by-arn-app');
    await createStream(local().kinesis, stream, 1);
    await createTables({ dynamodb: local().dynamodb, applicationName: app });
    const streamArn = `arn:aws:kinesis:${local().region}:000000000000:stream/${stream}`;
    const consumer = new Kinsumer({ streamArn, applicationName: app, kinesis: local().kinesis, dynamodb: local().dynamodb, logger: QUIET });
    const error = await firstValueFrom(consumer.records$).then(() => undefined, (e: unknown) => e);
    await consumer.stop().catch(() => undefined);
    const explained = `the Kinesis server at ${local().endpoints.kinesis} does not take a stream's ARN (StreamARN), as kinesalite does not: name the stream instead (streamName, or --stream <name> in the CLI)`;
    expect((error as Error).message).to.contain(explained);
    expect(error).to.be.instanceOf(KinsumerError).and.include({ retriable: false });
    const tail = await cli(['tail', '--stream', streamArn, '--limit', '1', '--endpoint', local().endpoints.kinesis]);
    expect(tail.code).to.equal(1);
    expect(tail.stderr).to.contain(explained).and.not.contain('Either NextToken');
  });

  it('records\' writes on dynalite: the error names TransactWriteItems and points at DynamoDB Local', async () => {
    const dynalite = await startDynalite();
    const client = new DynamoDBClient({ endpoint: dynalite.endpoint, region: 'us-east-1', credentials: local().credentials });
    try {
      const error = await firstValueFrom(new Dynamo(client).transactWriteItems({ TransactItems: [{ Put: { TableName: 't', Item: { k: { S: 'v' } } } }] })).then(() => undefined, (e: unknown) => e);
      expect(error).to.be.instanceOf(EndpointError);
      expect((error as Error).message).to.equal(`the DynamoDB server at ${dynalite.endpoint} does not know the operation TransactWriteItems (UnknownOperationException): `
        + "dynalite has no transactions, which records' writes (ack({ writes })) need: use DynamoDB Local (startLocalAws({ dynamodb: 'dynamodb-local' }) from kinsumer/testing) or DynamoDB");
    } finally {
      client.destroy();
      await dynalite.stop();
    }
  });

  it('CLI: create-tables without a region says to give --region; an endpoint without its scheme is a usage error saying so', async () => {
    const bare = await withEnv(BARE_AWS_ENV, () => cli(['create-tables', '--app', 'a']));
    expect(bare.code).to.equal(1);
    expect(bare.stderr).to.match(/^kinsumer create-tables: describing table a_clients failed: the DynamoDB client has no region: .*pass --region to the CLI\n$/);
    const noScheme = await cli(['status', '--stream', 's', '--app', 'a', '--kinesis-endpoint', local().endpoints.kinesis, '--dynamodb-endpoint', 'localhost:8000']);
    expect(noScheme.code).to.equal(2);
    expect(noScheme.stderr).to.equal('kinsumer status: --dynamodb-endpoint localhost:8000 has no scheme: write it as http://localhost:8000 (or https://)\n');
  });

  it('CLI: a misspelt command or option gets "did you mean"', async () => {
    const command = await cli(['staus']);
    expect(command.code).to.equal(2);
    expect(command.stderr.split('\n')[0]).to.equal("kinsumer: unknown command 'staus' (did you mean status?)");
    const option = await cli(['status', '--stream', 's', '--app', 'a', '--regoin', 'x']);
    expect(option.code).to.equal(2);
    expect(option.stderr.split('\n')[0]).to.equal("kinsumer status: unknown option '--regoin' (did you mean --region?)");
  });
});
