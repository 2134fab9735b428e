import { readFileSync } from 'node:fs';

/** The package's version, from its package.json: two levels up from both src/cli/ and dist/cli/. */
export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}
