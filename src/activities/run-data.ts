// Per-run datasets for activities: rebuilt from the run's config on any worker, then kept for the
// worker's lifetime (the data is referenced by the config, never carried in payloads). A failed
// build is dropped from the cache and surfaces as a non-retryable data error.
import { ApplicationFailure } from '@temporalio/activity';
import type { RunRef } from '../cookbook/run-store.js';
import { readRunConfig } from './training.js';
import { ErrorTypes } from './types.js';

/**
 * A cache of one kind of run data: the returned function reads the run's config and hands back the
 * data built for it, building it once per distinct `JSON.stringify(keyOf(cfg))`. Each call of
 * `runDataCache` has its own cache, so kinds never share entries.
 */
export function runDataCache<C, D>(
  keyOf: (cfg: C) => unknown,
  build: (cfg: C) => Promise<D>,
): (run: RunRef) => { cfg: C; data: Promise<D> } {
  const cache = new Map<string, Promise<D>>();
  return (run) => {
    const cfg = readRunConfig<C>(run);
    const key = JSON.stringify(keyOf(cfg));
    let data = cache.get(key);
    if (!data) {
      data = build(cfg).catch((err: unknown) => {
        cache.delete(key);
        throw ApplicationFailure.nonRetryable(err instanceof Error ? err.message : String(err), ErrorTypes.data);
      });
      cache.set(key, data);
    }
    return { cfg, data };
  };
}
