// A run's config as its activities see it.
import { RunStore, type RunRef } from '../cookbook/run-store.js';

/** The run's config, its `base_url` the backend it trains on now (another after a failover). */
export function readRunConfig<C>(run: RunRef): C {
  const config = new RunStore(run.logPath).read<C>().config;
  return run.trainingBaseUrl === undefined ? config : { ...config, base_url: run.trainingBaseUrl };
}
