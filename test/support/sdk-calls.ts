// What the lean-call conformance suites compare: an error as the SDK reports it, and the commands a
// client's own middleware sees.
import { classifyAwsError } from '../../src/errors/aws-error-kind.js';

/** The error a call fails with; throws when it does not fail. */
export async function failure(call: Promise<unknown>): Promise<unknown> {
  return call.then(() => { throw new Error('expected the call to fail'); }, (error: unknown) => error);
}

/** What the SDK and kinsumer report of one error: class, name, fault, status, message, classification. */
export function errorShape(error: unknown) {
  const e = error as Error & { $fault?: string; $metadata?: { httpStatusCode?: number } };
  return { constructor: e.constructor, name: e.name, fault: e.$fault, status: e.$metadata?.httpStatusCode, message: e.message, class: classifyAwsError(e) };
}

/** An SDK client's middleware stack, as far as adding an initialize-step middleware goes. */
interface Stack {
  add(middleware: (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) => (args: unknown) => Promise<unknown>, options: { step: 'initialize'; name: string }): void;
}

/** Adds a middleware of the application's kind (tracing, say) to `client`: the names of the commands it sees. */
export function watchCommands(client: { readonly middlewareStack: object }): string[] {
  const seen: string[] = [];
  (client.middlewareStack as Stack).add((next, context) => (args) => {
    seen.push(String(context.commandName));
    return next(args);
  }, { step: 'initialize', name: 'applicationTracing' });
  return seen;
}
