// Placeholder replaced below.
export function scaleMain(_argv: string[]): Promise<number> {
  return Promise.resolve(0);
}
