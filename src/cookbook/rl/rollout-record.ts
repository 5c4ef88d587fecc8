// The per-iteration rollout record (run-store.ts RolloutRecord) of an RL or distillation train step.
import type { RolloutRecord } from '../run-store.js';
import type { TrajectoryGroup } from './types.js';

export interface RecordedGroup {
  ref: string;
  batch: number;
  group: number;
  samplingStep: number | null;
  tags: readonly string[];
  /** The group as the train step read it back from `ref`. */
  trajectories: TrajectoryGroup;
}

/**
 * `trained` is the subset of the groups' `trajectories` (same objects) that reached the loss, and
 * `advantages` its advantages, aligned with it; a group left out gets `advantages: null`.
 */
export function rolloutRecord(step: number, groups: readonly RecordedGroup[], trained: readonly TrajectoryGroup[], advantages: readonly number[][]): RolloutRecord {
  return {
    format: 'rollout_record/v1',
    step,
    split: 'train',
    groups: groups.map((g) => {
      const at = trained.indexOf(g.trajectories);
      return { ref: g.ref, batch: g.batch, group: g.group, sampling_step: g.samplingStep, tags: [...g.tags], advantages: at === -1 ? null : [...advantages[at]] };
    }),
  };
}
