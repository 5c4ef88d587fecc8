// vitest globalSetup: every temp file and folder of a test run (the tests' own mkdtemp folders, run
// stores, engine data, the servers' scratch files) goes under one folder of its own, removed when the
// run ends, so repeated runs leave nothing behind in the OS temp dir. Set here, in the main process,
// TMPDIR reaches every test worker and every process a test starts. So does the workflow bundle
// cache: the run's in-process and process workers bundle the workflow code once between them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const previous = { TMPDIR: process.env.TMPDIR, COOKBOOK_WORKFLOW_BUNDLE_CACHE: process.env.COOKBOOK_WORKFLOW_BUNDLE_CACHE, COOKBOOK_STORE_CACHE: process.env.COOKBOOK_STORE_CACHE };
  const dir = mkdtempSync(join(tmpdir(), 'cookbook-vitest-'));
  process.env.TMPDIR = dir;
  process.env.COOKBOOK_WORKFLOW_BUNDLE_CACHE = join(dir, 'workflow-bundles');
  // Mirrors of runs in an object store (src/cookbook/stores/mirror.ts), not the user's cache.
  process.env.COOKBOOK_STORE_CACHE = join(dir, 'store-cache');
  return () => {
    for (const [key, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    // A process a killed test started may still be writing as the run ends: retry the removal.
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  };
}
