// Which tier this run is (docs/testing.md): `npm test` runs the gate, `npm run test:full` everything.
// Whole files of the fuller tier are named `*.full.test.ts` (vitest.config.ts leaves them out of the
// gate); within a file, `inFullTier` keeps long variants of a check out of the gate while the file's
// gate checks share its set-up (a chaos lab's baseline, say) with them.
export const fullTier = process.env.COOKBOOK_TEST_TIER === 'full';

/** The cases a tier runs: the gate's always, the fuller tier's as well under `npm run test:full`. */
export function inFullTier<T>(gate: T[], fullOnly: T[]): T[] {
  return fullTier ? [...gate, ...fullOnly] : gate;
}
