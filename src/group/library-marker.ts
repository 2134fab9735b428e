// Which library wrote a clients row. Every heartbeat of this library writes `Library`
// (`kinsumer-ts/<version>`); the Go kinsumer's heartbeat is a full PutItem of ID, Name and
// LastUpdate(RFC) and so never carries it. A live row without the marker is a member that follows
// the Go kinsumer's rules, and the whole group then assigns shards as Go does (src/group/go-assignment.ts).
//
// An explicit marker rather than `InstanceID` (also ours only): that attribute exists to tell two
// processes of one clientId apart and may change for that purpose; the marker says what a row's
// writer speaks, with a version, so a later protocol change can find older members the same way.
import { packageVersion } from '../telemetry/package-version.js';

/** The attribute of `<app>_clients` that marks this library's rows. */
export const LIBRARY_ATTRIBUTE = 'Library';

const NAME = 'kinsumer-ts';
let marker: string | undefined;

/** The marker this library writes: `kinsumer-ts/<version>` (`kinsumer-ts` when the version cannot be read). */
export function libraryMarker(): string {
  if (marker === undefined) {
    try {
      marker = `${NAME}/${packageVersion()}`;
    } catch {
      // A bundle without package.json: the name alone still marks the row.
      marker = NAME;
    }
  }
  return marker;
}

/** `true` for a row this library (any version) wrote; `false` for a Go kinsumer's (no marker) or any other writer's. */
export function writtenByThisLibrary(library: string | undefined): boolean {
  return library === NAME || (library?.startsWith(`${NAME}/`) ?? false);
}
