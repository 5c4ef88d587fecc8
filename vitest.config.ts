import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/run-tmpdir.ts'],
    // Kill-and-compare tests take 45-55 s here and run a clean and a crashed run each: a 2-core CI
    // machine on a throttled disk must not turn them into timeouts (speed is for bench/, not tests).
    testTimeout: 300_000,
    hookTimeout: 300_000,
    // Integration suites start real servers (engine, Temporal); keep files serial on 2 cores.
    fileParallelism: false,
    pool: 'forks',
  },
});
