// All activities, built from their dependencies by the worker.
import type { ActivityDeps } from './context.js';
import { dpoActivities } from './dpo.js';
import { evaluatorActivities } from './evaluators.js';
import { rlActivities } from './rl.js';
import { distillActivities } from './distill.js';
import { supervisedActivities } from './sl.js';
import { trainingActivities } from './training.js';
import type { Activities } from './types.js';

export type { ActivityDeps } from './context.js';

export function createActivities(deps: ActivityDeps): Activities {
  return { ...trainingActivities(deps), ...supervisedActivities(deps), ...rlActivities(deps), ...dpoActivities(deps), ...distillActivities(deps), ...evaluatorActivities(deps) };
}
