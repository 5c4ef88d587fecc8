// All activities, built from their dependencies by the worker.
import type { ActivityDeps } from './context.js';
import { decisionsActivities } from './decisions.js';
import { dpoActivities } from './dpo.js';
import { evaluatorActivities } from './evaluators.js';
import { evalActivities } from './eval.js';
import { evalInspectActivities } from './eval-inspect.js';
import { evalScheduleActivities } from './eval-schedule.js';
import { ttsActivities } from './tts.js';
import { rlActivities } from './rl.js';
import { distillActivities } from './distill.js';
import { offPolicyDistillActivities } from './distill-off-policy.js';
import { promptDistillationActivities } from './prompt-distillation.js';
import { sdftActivities } from './sdft.js';
import { supervisedActivities } from './sl.js';
import { sweepActivities } from './sweep.js';
import { hotForwardActivities } from './hot-forward.js';
import { trainingActivities } from './training.js';
import { withFailover } from './failover.js';
import { withTiming } from './timing.js';
import { withTracking } from './tracking.js';
import { withStoreSync } from './store-sync.js';
import type { Activities } from './types.js';

export type { ActivityDeps } from './context.js';

export function createActivities(deps: ActivityDeps): Activities {
  // Tracking (W&B) mirrors the run store after the activities that write to it (tracking.ts), once
  // their timing (timing.ts) is stored.
  // Runs in an object store are pulled before and pushed after everything else (store-sync.ts).
  return withStoreSync(withFailover(withTracking(withTiming({ ...trainingActivities(deps), ...supervisedActivities(deps), ...rlActivities(deps), ...dpoActivities(deps), ...decisionsActivities(deps), ...distillActivities(deps), ...offPolicyDistillActivities(deps), ...promptDistillationActivities(deps), ...sdftActivities(deps), ...evaluatorActivities(deps), ...evalActivities(deps), ...evalInspectActivities(deps), ...evalScheduleActivities(), ...ttsActivities(deps), ...sweepActivities(), ...hotForwardActivities() }))));
}
