// The server's clock as its answer's `Date` header tells it (RFC 7231: whole seconds), read by a
// middleware on one command's own stack — not the application's client. Plain functions over the
// shapes the AWS SDK's middleware stack passes, so no SDK import here.

type Next = (args: unknown) => Promise<{ response: unknown; output?: unknown }>;

/** A deserialize-step middleware, as the SDK's middleware stack calls it. */
export type ServerDateMiddleware = (next: Next) => (args: unknown) => Promise<{ response: unknown; output?: unknown }>;

/**
 * A middleware for one command (add it right after — inside — `deserializerMiddleware`) and what it
 * read: `date()` is the `Date` header of the last answer with one (a retried call's last attempt),
 * `undefined` when none had a readable one.
 */
export function serverDate(): { readonly middleware: ServerDateMiddleware; readonly date: () => Date | undefined } {
  let date: Date | undefined;
  const middleware: ServerDateMiddleware = (next) => async (args) => {
    const result = await next(args);
    const headers = (result.response as { headers?: Record<string, string | undefined> } | undefined)?.headers;
    date = dateOf(headers) ?? date;
    return result;
  };
  return { middleware, date: () => date };
}

/** The server's clock as an answer's `Date` header says it; `undefined` without a readable one. */
export function dateOf(headers: Readonly<Record<string, string | undefined>> | undefined): Date | undefined {
  const value = headers?.['date'] ?? headers?.['Date'];
  const ms = value === undefined ? Number.NaN : Date.parse(value);
  return Number.isFinite(ms) ? new Date(ms) : undefined;
}

/** An AWS SDK v3 command, as far as adding a middleware to its own stack goes. */
interface CommandWithStack {
  readonly middlewareStack: {
    addRelativeTo(middleware: never, options: { readonly relation: 'after'; readonly toMiddleware: string; readonly name: string }): void;
  };
}

/** Adds {@link serverDate}'s middleware to `command`'s own stack; returns its reading of the answer's `Date`. */
export function readServerDate(command: CommandWithStack): () => Date | undefined {
  const { middleware, date } = serverDate();
  command.middlewareStack.addRelativeTo(middleware as never, { relation: 'after', toMiddleware: 'deserializerMiddleware', name: 'kinsumerServerDate' });
  return date;
}

/** The `Date` header counts whole seconds: the answer was made within this long after the time it names. */
export const DATE_HEADER_RESOLUTION_MS = 1000;
