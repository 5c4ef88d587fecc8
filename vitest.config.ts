import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // Integration suites start real servers (engine, Temporal); keep files serial on 2 cores.
    fileParallelism: false,
    pool: 'forks',
  },
});
