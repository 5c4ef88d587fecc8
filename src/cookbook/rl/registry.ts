// Environments of your own. A config stays serialisable, so an environment is code registered
// under a name — by the module a `{"kind": "custom", "module": …}` dataset config names, imported
// by whichever process builds the dataset (the CLI's data check, any worker) — and the config
// carries only that name and JSON arguments.
import type { Renderer } from '../renderers/types.js';
import type { Tokenizer } from '../tokenizer.js';
import { BUILTIN_RL_DATASETS } from './envs/builtin.js';
import type { RLDataset } from './types.js';

export interface CustomRLDatasetContext {
  /** The dataset config's `args`, as given (validate them in the builder). */
  args: Record<string, unknown>;
  renderer: Renderer;
  tokenizer: Tokenizer;
  modelName: string;
}

export interface CustomRLDatasets {
  train: RLDataset;
  test?: RLDataset;
}

export type CustomRLDatasetBuilder = (ctx: CustomRLDatasetContext) => CustomRLDatasets | Promise<CustomRLDatasets>;

// The shipped environments are registered up front; a user's registration of the same name wins.
const builders = new Map<string, CustomRLDatasetBuilder>(Object.entries(BUILTIN_RL_DATASETS));

/** Register (or replace) the builder of the RL datasets a `custom` config names `name`. */
export function registerRLDataset(name: string, builder: CustomRLDatasetBuilder): void {
  builders.set(name, builder);
}

export function registeredRLDataset(name: string): CustomRLDatasetBuilder | undefined {
  return builders.get(name);
}

export function registeredRLDatasetNames(): string[] {
  return [...builders.keys()].sort();
}
