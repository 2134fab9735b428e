import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { NodeHttp2Handler, NodeHttpHandler } from '@smithy/node-http-handler';
import { expect } from 'chai';
import { type HandlerFacts, inspectHandler, planConnections } from '../../../src/connections/handler-plan.js';

// Whose connections kinsumer's calls go on, read off real SDK clients and handlers.

const credentials = { accessKeyId: 'x', secretAccessKey: 'y' };
const kinesis = (requestHandler?: unknown) => new KinesisClient({ region: 'us-east-1', credentials, ...(requestHandler === undefined ? {} : { requestHandler: requestHandler as NodeHttpHandler }) });
const dynamodb = (requestHandler?: unknown) => new DynamoDBClient({ region: 'us-east-1', credentials, ...(requestHandler === undefined ? {} : { requestHandler: requestHandler as NodeHttpHandler }) });

describe('connections: the plan for a client\'s request handler', () => {
  it('new KinesisClient({}): the SDK\'s HTTP/2 handler with a session per call, nothing of the application\'s → kinsumer\'s own connections, no warning', async () => {
    const facts = await inspectHandler(kinesis().config.requestHandler);
    expect(facts).to.deep.equal({ kind: 'h2', sessionPerCall: true, custom: false });
    expect(planConnections('kinesis', facts)).to.deep.equal({ route: 'own' });
  });

  it('new DynamoDBClient({}) and a bare new NodeHttpHandler() → kinsumer\'s own connections', async () => {
    for (const client of [dynamodb(), kinesis(new NodeHttpHandler()), dynamodb(new NodeHttpHandler({ requestTimeout: 5000 }))]) {
      const facts = await inspectHandler(client.config.requestHandler);
      expect(facts).to.deep.equal({ kind: 'http1', keepAlive: true, custom: false });
      expect(planConnections('dynamodb', facts).route).to.equal('own');
    }
  });

  it('a handler with the application\'s agent or agent options is used as it is; a warning only when it opens a connection per call', async () => {
    const keptAlive = await inspectHandler(dynamodb(new NodeHttpHandler({ httpsAgent: new HttpsAgent({ keepAlive: true }) })).config.requestHandler);
    expect(keptAlive).to.deep.equal({ kind: 'http1', keepAlive: true, custom: true });
    expect(planConnections('dynamodb', keptAlive)).to.deep.equal({ route: 'client' });
    const options = await inspectHandler(dynamodb(new NodeHttpHandler({ httpsAgent: { maxSockets: 200 } })).config.requestHandler);
    expect(options).to.deep.equal({ kind: 'http1', keepAlive: true, custom: true });
    const perCall = await inspectHandler(kinesis(new NodeHttpHandler({ httpAgent: new HttpAgent({ keepAlive: false }) })).config.requestHandler);
    expect(perCall).to.deep.equal({ kind: 'http1', keepAlive: false, custom: true });
    const plan = planConnections('kinesis', perCall);
    expect(plan.route).to.equal('client');
    expect(plan.warning).to.match(/KinesisClient's request handler opens a connection for every call.*keepAlive: true/);
  });

  it('an HTTP/2 handler with the application\'s connect options is used as it is; a warning when it opens a session per call, naming the fix', async () => {
    const perCall = await inspectHandler(kinesis(new NodeHttp2Handler({ disableConcurrentStreams: true, nodeHttp2ConnectOptions: {} })).config.requestHandler);
    expect(perCall).to.deep.equal({ kind: 'h2', sessionPerCall: true, custom: true });
    const plan = planConnections('kinesis', perCall);
    expect(plan.route).to.equal('client');
    expect(plan.warning).to.match(/HTTP\/2 session, a TLS connection, for every call/);
    expect(plan.warning).to.contain('new NodeHttpHandler({ httpsAgent: new https.Agent({ keepAlive: true }) })');
    const shared = await inspectHandler(kinesis(new NodeHttp2Handler({ disableConcurrentStreams: false, nodeHttp2ConnectOptions: {} })).config.requestHandler);
    expect(planConnections('kinesis', shared)).to.deep.equal({ route: 'client' });
  });

  it('any other handler (the application\'s own class, fetch) is used as it is, without a word', async () => {
    const own = { handle: () => Promise.reject(new Error('not called')) };
    const facts: HandlerFacts = await inspectHandler(kinesis(own).config.requestHandler);
    expect(facts).to.deep.equal({ kind: 'other' });
    expect(planConnections('kinesis', facts)).to.deep.equal({ route: 'client' });
    expect(await inspectHandler(undefined)).to.deep.equal({ kind: 'other' });
    expect(await inspectHandler({ metadata: { handlerProtocol: 'h2' }, configProvider: Promise.reject(new Error('options failed')) })).to.deep.equal({ kind: 'other' });
  });
});
