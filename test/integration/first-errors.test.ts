import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { NodeHttp2Handler } from '@smithy/node-http-handler';
import { expect } from 'chai';
import { filter, firstValueFrom, take, toArray } from 'rxjs';
import { EndpointError, Kinsumer, KinsumerError, createTables, type KinsumerEvent } from '../../src/index.js';
import { createStream, putRecords } from '../../src/testing/index.js';
import { cli } from '../support/cli.js';
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
});
