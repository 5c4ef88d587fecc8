// The workflow bundle cache: with COOKBOOK_WORKFLOW_BUNDLE_CACHE set, the first process bundles and
// writes the bundle under a key of the sources; later processes read it instead of bundling again.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';

const fresh = async () => (await import('../../src/workers/worker.js')).workflowBundle;

describe('workflow bundle cache', () => {
  const previous = process.env.COOKBOOK_WORKFLOW_BUNDLE_CACHE;
  afterEach(() => {
    if (previous === undefined) delete process.env.COOKBOOK_WORKFLOW_BUNDLE_CACHE;
    else process.env.COOKBOOK_WORKFLOW_BUNDLE_CACHE = previous;
    vi.resetModules();
  });

  it('bundles once into the cache folder; a later process reads that bundle back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bundle-cache-'));
    process.env.COOKBOOK_WORKFLOW_BUNDLE_CACHE = dir;
    vi.resetModules();
    const built = await (await fresh())();
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^workflows-[0-9a-f]{16}\.js$/);
    expect(readFileSync(join(dir, files[0]), 'utf8')).toBe(built.code);

    // What a later process finds under the key is what it runs (here: a marked copy).
    writeFileSync(join(dir, files[0]), `${built.code}\n// read from the cache`);
    vi.resetModules();
    const read = await (await fresh())();
    expect(read.code.endsWith('// read from the cache')).toBe(true);
    expect(readdirSync(dir)).toEqual(files);
  });

  it('without the variable, a process bundles for itself', async () => {
    delete process.env.COOKBOOK_WORKFLOW_BUNDLE_CACHE;
    vi.resetModules();
    const built = await (await fresh())();
    expect(built.code.length).toBeGreaterThan(100_000);
  });
});
