// How a person is told which client: its clientName, with its id shortened as a short commit hash
// is read (the CLI's status table and the log lines name clients the same way).

/** A client id for the narrow view: a UUID by its first 8 characters, any id by at most 20. */
export function shortId(id: string): string {
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(id)) return `${id.slice(0, 8)}…`;
  return id.length > 20 ? `${id.slice(0, 19)}…` : id;
}

/** `w-alpha (3f1c958e…)`; the short id alone when the row has no name, or the name is the id. */
export function clientLabel(id: string, name: string | undefined): string {
  return name === undefined || name === '' || name === id ? shortId(id) : `${name} (${shortId(id)})`;
}
