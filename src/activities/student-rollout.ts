// One group of a student's on-policy rollouts, as the distillation loops (on-policy distillation,
// SDFT) sample them: seeds from (run seed, step, group, sample, attempt) as RL's, FailFast and no
// constant-reward filtering (every reward is 0), and what stable_reinforce trains on recorded at
// sampling as RL does. Every group of a step runs in parallel: together the reference's `sample` span.
import type { SamplingSession } from '../backends/types.js';
import { tinkerTokenCompleter } from '../cookbook/rl/completers.js';
import { doGroupRolloutAndFilterConstantReward, failFast } from '../cookbook/rl/rollouts.js';
import { sequentialSeeds } from '../cookbook/rl/seeds.js';
import type { EnvGroupBuilder, TrajectoryGroup } from '../cookbook/rl/types.js';
import { nowMs, recordSpan } from '../cookbook/timing.js';
import { heartbeating, rolloutFailure } from './context.js';

export interface StudentRolloutOptions {
  seed: number;
  step: number;
  group: number;
  maxTokens: number;
  temperature: number;
  lossFn: string;
}

/** The group's trajectories (null: every rollout failed), sampled on the session `withStudent` lends. */
export async function studentGroupRollout(
  withStudent: <T>(fn: (session: SamplingSession) => Promise<T>) => Promise<T>,
  builder: EnvGroupBuilder,
  o: StudentRolloutOptions,
): Promise<TrajectoryGroup | null> {
  const started = nowMs();
  try {
    return await withStudent((session) => {
      const policy = {
        forRollout: ({ sampleIndex, attempt }: { sampleIndex: number; attempt: number }) =>
          tinkerTokenCompleter(session, {
            maxTokens: o.maxTokens,
            temperature: o.temperature,
            seedFor: sequentialSeeds(o.seed, o.step, o.group, sampleIndex, attempt),
            recordStabilityInfo: o.lossFn === 'stable_reinforce',
          }),
      };
      return heartbeating(doGroupRolloutAndFilterConstantReward(builder, policy, { strategy: failFast() }), { step: o.step, group: o.group });
    });
  } catch (err) {
    throw rolloutFailure(err, `student rollout of step ${o.step} group ${o.group}`);
  } finally {
    recordSpan('sample', started, nowMs(), { part: true });
  }
}
