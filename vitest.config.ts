import { defineConfig } from 'vitest/config';

// Two tiers (docs/testing.md): `npm test`, the gate CI runs, leaves out the `*.full.test.ts` files
// (every chaos trial, long variants, load and soak smoke runs); `npm run test:full` runs everything.
const full = process.env.COOKBOOK_TEST_TIER === 'full';
// `*.docker.test.ts` files need a Docker engine: opt-in only (`npm run test:docker-terminal`), in no tier.
const docker = process.env.COOKBOOK_TEST_DOCKER === '1';
const workers = Math.max(1, Number(process.env.COOKBOOK_TEST_WORKERS ?? 2) || 2);

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['**/node_modules/**', ...(full ? [] : ['test/**/*.full.test.ts']), ...(docker ? [] : ['test/**/*.docker.test.ts'])],
    // Order matters: the shared stack's folder lies under the run's TMPDIR, and teardowns run in reverse.
    globalSetup: ['test/support/run-tmpdir.ts', 'test/support/shared-stack.ts'],
    // Kill-and-compare tests take 45-55 s here and run a clean and a crashed run each: a 2-core CI
    // machine on a throttled disk must not turn them into timeouts (speed is for bench/, not tests).
    testTimeout: 300_000,
    hookTimeout: 300_000,
    // Two files at a time, each in its own process (forks), every engine on one intra-op thread
    // (scripts/test.mjs sets TINKER_ENGINE_THREADS=1). Measured on 2 cores over five integration
    // files: serial with two-thread engines 293 s (1.36 cores busy: a test waits on its engine, its
    // worker or the server in turn); serial with one-thread engines 333 s; two files at a time with
    // two-thread engines 394 s (intra-op threads spin against each other); two files at a time with
    // one-thread engines 200 s. COOKBOOK_TEST_WORKERS changes the count. Within a process the files
    // share one import of the library, the SDKs and the tokenizers (isolate: false), and a file
    // leaves the process as it found it (environment variables restored, servers stopped).
    fileParallelism: true,
    maxWorkers: workers,
    minWorkers: workers,
    pool: 'forks',
    isolate: false,
  },
});
