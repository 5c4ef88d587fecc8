import { defineConfig } from 'vitest/config';

// Two tiers (docs/testing.md): `npm test`, the gate CI runs, leaves out the `*.full.test.ts` files
// (every chaos trial, long variants, load and soak smoke runs); `npm run test:full` runs everything.
const full = process.env.COOKBOOK_TEST_TIER === 'full';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['**/node_modules/**', ...(full ? [] : ['test/**/*.full.test.ts'])],
    // Order matters: the shared stack's folder lies under the run's TMPDIR, and teardowns run in reverse.
    globalSetup: ['test/support/run-tmpdir.ts', 'test/support/shared-stack.ts'],
    // Kill-and-compare tests take 45-55 s here and run a clean and a crashed run each: a 2-core CI
    // machine on a throttled disk must not turn them into timeouts (speed is for bench/, not tests).
    testTimeout: 300_000,
    hookTimeout: 300_000,
    // Integration suites start real servers (engine, Temporal) and are CPU-bound on the engine: keep
    // files serial on 2 cores. One process runs them all (isolate: false): importing the library,
    // the SDKs and the tokenizers once, not once per file, halves the in-process suites' time. A
    // file leaves the process as it found it (environment variables restored, servers stopped).
    fileParallelism: false,
    pool: 'forks',
    isolate: false,
  },
});
