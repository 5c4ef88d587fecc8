// §2.11 trajectory metrics (keys, order, tags, by_group), §2.12 rollout summary rows, and the
// lossless trajectory-group serialisation used for the run-store claim check.
import { describe, expect, it } from 'vitest';
import { modelInputFromInts } from '../../../src/cookbook/model-input.js';
import { computeTrajectoryMetrics, rolloutSummariesJsonl, rolloutSummaryRows } from '../../../src/cookbook/rl/metrics.js';
import { deserializeTrajectoryGroup, serializeTrajectoryGroup } from '../../../src/cookbook/rl/serialize.js';
import { TrajectoryGroup } from '../../../src/cookbook/rl/types.js';
import { groupWithRewards, traj, transition } from './helpers.js';

describe('computeTrajectoryMetrics', () => {
  const g1 = new TrajectoryGroup(
    [
      traj([transition([1, 2, 3], [4, 5], { reward: 1, episodeDone: true, metrics: { correct: 1, 'stop/completed': 1 } })]),
      traj([transition([1, 2, 3], [4], { reward: 0, episodeDone: true, metrics: { correct: 0 } })]),
    ],
    [0, 0],
    [{ group_m: 2 }, {}],
  );
  const g2 = groupWithRewards([1, 1]);

  it('emits env/all keys in the reference order with the reference values', () => {
    const m = computeTrajectoryMetrics([g1, g2], [['a'], ['a']]);
    expect(Object.keys(m)).toEqual([
      'env/all/ac_tokens_per_turn',
      'env/all/ob_tokens_per_turn',
      'env/all/turns_per_episode',
      'env/all/total_episodes',
      'env/all/total_turns',
      'env/all/total_ac_tokens',
      'env/all/total_ob_tokens',
      'env/all/total_cached_ob_tokens',
      'env/all/reward/total',
      'env/all/correct',
      'env/all/stop/completed',
      'env/all/group_m',
      'env/all/by_group/frac_mixed',
      'env/all/by_group/frac_all_good',
      'env/all/by_group/frac_all_bad',
    ]);
    expect(m['env/all/ac_tokens_per_turn']).toBe(7 / 4);
    expect(m['env/all/ob_tokens_per_turn']).toBe(3);
    expect(m['env/all/turns_per_episode']).toBe(1);
    expect(m['env/all/total_episodes']).toBe(4);
    expect(m['env/all/reward/total']).toBe(0.75);
    expect(m['env/all/correct']).toBe(0.5);
    expect(m['env/all/by_group/frac_mixed']).toBe(0.5);
    expect(m['env/all/by_group/frac_all_good']).toBe(0.5);
    expect(m['env/all/by_group/frac_all_bad']).toBe(0);
    expect(m['env/all/total_cached_ob_tokens']).toBe(0); // no sampler reported a prefix-cache hit
  });

  it('totals the prefix-cache hits the sampler reported per turn as total_cached_ob_tokens', () => {
    const cached = (ob: number[], ac: number[], hits: number) => {
      const t = transition(ob, ac, { episodeDone: true });
      return { ...t, ac: { ...t.ac, promptCacheHitTokens: hits } };
    };
    const g = new TrajectoryGroup([traj([cached([1, 2, 3, 4], [5], 3)]), traj([cached([1, 2, 3], [6, 7], 2), cached([9], [8], 0)])], [0, 0], [{}, {}]);
    const m = computeTrajectoryMetrics([g], [['t']]);
    expect(m['env/all/total_ob_tokens']).toBe(8);
    expect(m['env/all/total_cached_ob_tokens']).toBe(5);
  });

  it('adds per-tag prefixes first when a tag selects a strict subset', () => {
    const m = computeTrajectoryMetrics([g1, g2], [['x'], ['y']]);
    const keys = Object.keys(m);
    expect(keys[0]).toBe('env/x/ac_tokens_per_turn');
    expect(keys.indexOf('env/y/reward/total')).toBeLessThan(keys.indexOf('env/all/ac_tokens_per_turn'));
    expect(m['env/x/reward/total']).toBe(0.5);
    expect(m['env/y/reward/total']).toBe(1);
  });

  it('is all zeros for no groups', () => {
    const m = computeTrajectoryMetrics([], []);
    expect(m['env/all/reward/total']).toBe(0);
    expect(m['env/all/by_group/frac_mixed']).toBe(0);
    expect(m['env/all/ac_tokens_per_turn']).toBe(0);
  });
});

describe('rolloutSummaryRows', () => {
  it('one row per trajectory with the §2.12 fields, written like Python json.dumps', () => {
    const g = new TrajectoryGroup(
      [traj([transition([1, 2, 3], [4, 5], { reward: 1, episodeDone: true, metrics: { format: 1 }, logs: { note: 'ok' } })])],
      [0.5],
      [{ correct: 1 }],
    );
    const rows = rolloutSummaryRows([g], [['gsm8k']], { iteration: 3, samplingClientStep: 3 });
    expect(rows).toHaveLength(1);
    const line = rolloutSummariesJsonl(rows);
    expect(line).toBe(
      '{"schema_version": 1, "split": "train", "iteration": 3, "group_idx": 0, "traj_idx": 0, "tags": ["gsm8k"], ' +
        '"sampling_client_step": 3, "total_reward": 1.5, "final_reward": 0.5, "trajectory_metrics": {"correct": 1.0}, ' +
        '"steps": [{"step_idx": 0, "ob_len": 3, "ac_len": 2, "reward": 1.0, "episode_done": true, "metrics": {"format": 1.0}, ' +
        '"logs": {"note": "ok"}}], "final_ob_len": 0}\n',
    );
  });
});

describe('serializeTrajectoryGroup', () => {
  it('round-trips tokens, float32 logprobs, sequence ids, cache hits, rewards, metrics, logs, errors and non-finite numbers', () => {
    const lp = [Math.fround(-0.123456789), Math.fround(-1e-8), -0];
    const g = new TrajectoryGroup(
      [
        {
          transitions: [
            { ...transition([1, 2, 3], [151643, 7, 8], { logprobs: lp, reward: 0.1 + 0.2, metrics: { x: NaN, y: Infinity } }), logs: { s: 'a', n: 2.5 } },
            { ...transition([1, 2, 3, 151643, 7, 8, 4], [5]), ac: { tokens: [5], maybeLogprobs: [-1], stopReason: 'stop', sequenceId: 's1', promptCacheHitTokens: 6 } },
          ],
          finalOb: modelInputFromInts([9]),
          stopReason: 'max_tokens',
        },
        traj([{ ...transition([4], []), ac: { tokens: [], maybeLogprobs: null, stopReason: 'length' } }]),
      ],
      [-Infinity, 1],
      [{ m: 1 }, {}],
      [{ errorType: 'TypeError', errorMessage: 'boom' }],
    );
    const back = deserializeTrajectoryGroup(serializeTrajectoryGroup(g));
    expect(back).toBeInstanceOf(TrajectoryGroup);
    expect(back).toEqual(g);
    expect(Object.is(back.trajectoriesG[0].transitions[0].ac.maybeLogprobs![2], -0)).toBe(true);
    expect(back.getTotalRewards()).toEqual(g.getTotalRewards());
  });
  it('rejects foreign JSON', () => {
    expect(() => deserializeTrajectoryGroup('{"a": 1}')).toThrow(/not a serialized trajectory group/);
  });
});
