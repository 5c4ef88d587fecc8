// §2.3 rollouts and §2.8 strategies with fake envs: FailFast propagation, RetryOnFailure budget
// and fresh envs, MinViableGroup floors, error counting, determinism of the result order.
import { describe, expect, it } from 'vitest';
import { BackendError } from '../../../src/backends/types.js';
import { modelInputFromInts } from '../../../src/cookbook/model-input.js';
import type { TokenCompleter } from '../../../src/cookbook/rl/completers.js';
import {
  doGroupRollout,
  doGroupRolloutAndFilterConstantReward,
  doSingleRollout,
  failFast,
  minViableFloor,
  minViableGroup,
  resolveRolloutStrategyConfig,
  retryOnFailure,
  RolloutErrorCounter,
  strategyFromConfig,
  type RolloutSlot,
} from '../../../src/cookbook/rl/rollouts.js';
import { RLConfigSchema } from '../../../src/cookbook/config/rl.js';
import { AllTrajectoriesFailedError, InitialObservationOverflow, TrajectoryGroup, type Env } from '../../../src/cookbook/rl/types.js';
import { FakeBuilder } from './helpers.js';

/** Answers with the env id found in the prompt (after a random delay, to shuffle completion). */
const echoPolicy: TokenCompleter = async (ob) => {
  const id = (ob.chunks[0] as { tokens: number[] }).tokens[1];
  await new Promise((r) => setTimeout(r, (id * 7) % 5));
  return { tokens: [id], maybeLogprobs: [-0.5], stopReason: 'stop' };
};

describe('doSingleRollout', () => {
  it('runs a multi-step env and takes stop_reason from the stop/ metric', async () => {
    let turn = 0;
    const env: Env = {
      async initialObservation() {
        return { ob: modelInputFromInts([1]), stopCondition: ['x'] };
      },
      async step(action) {
        turn++;
        const done = turn === 2;
        return {
          reward: action.length,
          episodeDone: done,
          nextObservation: modelInputFromInts([1, 2, 3]),
          nextStopCondition: ['x'],
          metrics: (done ? { 'stop/max_turns': 1 } : {}) as Record<string, number>,
        };
      },
    };
    const calls: number[][] = [];
    const policy: TokenCompleter = async (ob) => {
      calls.push((ob.chunks[0] as { tokens: number[] }).tokens);
      return { tokens: [5, 6], maybeLogprobs: [-1, -1], stopReason: 'length' };
    };
    const t = await doSingleRollout(policy, env);
    expect(t.transitions).toHaveLength(2);
    expect(calls).toEqual([[1], [1, 2, 3]]);
    expect(t.stopReason).toBe('max_turns');
    expect(t.transitions[1].episodeDone).toBe(true);
  });

  it('turns an initial-observation overflow into one synthetic transition', async () => {
    const env: Env = {
      async initialObservation() {
        return new InitialObservationOverflow(-0.1, { 'stop/context_overflow': 1 });
      },
      async step() {
        throw new Error('not called');
      },
    };
    const t = await doSingleRollout(echoPolicy, env);
    expect(t.transitions).toHaveLength(1);
    expect(t.transitions[0].reward).toBe(-0.1);
    expect(t.transitions[0].ac.tokens).toEqual([]);
    expect(t.stopReason).toBe('context_overflow');
  });
});

describe('failFast', () => {
  it('returns trajectories in env order and cleans up', async () => {
    const b = new FakeBuilder(4);
    const g = await doGroupRollout(b, echoPolicy, failFast());
    expect(g.getTotalRewards()).toEqual([0, 1, 2, 3]);
    expect(b.cleanups).toBe(1);
  });
  it('propagates the first error and still cleans up', async () => {
    const b = new FakeBuilder(3, new Set([1]));
    await expect(doGroupRollout(b, echoPolicy, failFast())).rejects.toThrow(/env 1 failed/);
    expect(b.cleanups).toBe(1);
    expect(failFast().catchesGroupErrors).toBe(false);
  });
});

describe('retryOnFailure', () => {
  it('retries a failure on a fresh env and records the error', async () => {
    const b = new FakeBuilder(3, new Set([1]));
    const g = await doGroupRollout(b, echoPolicy, retryOnFailure());
    // Slot 1 is retried on env 3 (makeEnvs()[0] of the second group); slot order is kept.
    expect(g.getTotalRewards()).toEqual([0, 3, 2]);
    expect(g.rolloutErrors).toEqual([{ errorType: 'TypeError', errorMessage: 'env 1 failed' }]);
    expect(b.makeEnvsCalls).toBe(2);
  });
  it('raises once the budget is spent (0 retries raises at once)', async () => {
    await expect(doGroupRollout(new FakeBuilder(2, new Set([0])), echoPolicy, retryOnFailure({ maxRetries: 0 }))).rejects.toThrow(/env 0/);
    // Three failures against a budget of two.
    await expect(doGroupRollout(new FakeBuilder(3, new Set([0, 1, 2])), echoPolicy, retryOnFailure({ maxRetries: 2 }))).rejects.toThrow();
  });
  it('asks a policy factory for each slot and attempt', async () => {
    const slots: RolloutSlot[] = [];
    const factory = {
      forRollout(slot: RolloutSlot): TokenCompleter {
        slots.push(slot);
        return echoPolicy;
      },
    };
    await doGroupRollout(new FakeBuilder(2, new Set([1])), factory, retryOnFailure());
    expect(slots).toEqual([
      { sampleIndex: 0, attempt: 0 },
      { sampleIndex: 1, attempt: 0 },
      { sampleIndex: 1, attempt: 1 },
    ]);
  });
  it('never swallows cancellation', async () => {
    const b = new FakeBuilder(2);
    const cancel: TokenCompleter = async () => {
      const e = new Error('cancelled');
      e.name = 'AbortError';
      throw e;
    };
    await expect(doGroupRollout(b, cancel, retryOnFailure())).rejects.toThrow('cancelled');
    expect(b.makeEnvsCalls).toBe(1);
  });
  it('never absorbs a backend (infrastructure) error: the group fails whole, to be retried with the same seeds', async () => {
    for (const strategy of [retryOnFailure(), minViableGroup()]) {
      const b = new FakeBuilder(4);
      const outage: TokenCompleter = async () => {
        throw new BackendError('engine unreachable', undefined, 'Sample', undefined, 'transport');
      };
      await expect(doGroupRollout(b, outage, strategy)).rejects.toBeInstanceOf(BackendError);
      await expect(doGroupRolloutAndFilterConstantReward(new FakeBuilder(2), outage, { strategy })).rejects.toBeInstanceOf(BackendError);
      expect(b.makeEnvsCalls).toBe(1);
    }
  });
  it('times out slow rollouts', async () => {
    const slow: TokenCompleter = () => new Promise(() => {});
    await expect(doGroupRollout(new FakeBuilder(1), slow, retryOnFailure({ maxRetries: 0, perRolloutTimeout: 0.05 }))).rejects.toThrow(/exceeded/);
  });
});

describe('minViableGroup', () => {
  it('floor is ceil(0.75·G)', () => {
    expect([4, 2, 8].map((n) => minViableFloor(n))).toEqual([3, 2, 6]);
    expect(minViableFloor(8, 1)).toBe(1);
  });
  it('keeps a partial group at the floor without retrying', async () => {
    const b = new FakeBuilder(4, new Set([2]));
    const g = await doGroupRollout(b, echoPolicy, minViableGroup());
    expect(g.getTotalRewards()).toEqual([0, 1, 3]);
    expect(g.rolloutErrors).toHaveLength(1);
    expect(b.makeEnvsCalls).toBe(1);
  });
  it('retries only what the floor needs', async () => {
    const b = new FakeBuilder(4, new Set([1, 2]));
    const g = await doGroupRollout(b, echoPolicy, minViableGroup());
    expect(g.trajectoriesG).toHaveLength(3);
    expect(b.makeEnvsCalls).toBe(2);
  });
  it('raises AllTrajectoriesFailedError below the floor', async () => {
    const b = new FakeBuilder(4, new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]));
    await expect(doGroupRollout(b, echoPolicy, minViableGroup({ maxRetries: 1 }))).rejects.toBeInstanceOf(AllTrajectoriesFailedError);
    expect(b.cleanups).toBe(1);
  });
});

describe('doGroupRolloutAndFilterConstantReward and the error counter', () => {
  it('returns null for group errors of catching strategies, rethrows for FailFast', async () => {
    const fails = () => new FakeBuilder(2, new Set([0, 1, 2, 3, 4, 5]));
    expect(await doGroupRolloutAndFilterConstantReward(fails(), echoPolicy, { strategy: retryOnFailure({ maxRetries: 1 }) })).toBeNull();
    expect(await doGroupRolloutAndFilterConstantReward(fails(), echoPolicy, { strategy: minViableGroup({ maxRetries: 0 }) })).toBeNull();
    await expect(doGroupRolloutAndFilterConstantReward(fails(), echoPolicy)).rejects.toThrow();
  });
  it('drops constant groups when asked', async () => {
    const constant: TokenCompleter = async () => ({ tokens: [1], maybeLogprobs: [0], stopReason: 'stop' });
    expect(await doGroupRolloutAndFilterConstantReward(new FakeBuilder(2), constant, { doRemoveConstantRewardGroups: true })).toBeNull();
    expect(await doGroupRolloutAndFilterConstantReward(new FakeBuilder(2), echoPolicy, { doRemoveConstantRewardGroups: true })).not.toBeNull();
  });
  it('counts errors per type, totals and skipped groups; round-trips its state', () => {
    const c = new RolloutErrorCounter();
    expect(c.getMetrics()).toEqual({});
    c.ingest(new TrajectoryGroup([], [], [], [{ errorType: 'TypeError', errorMessage: 'x' }, { errorType: 'RangeError', errorMessage: 'y' }, { errorType: 'TypeError', errorMessage: 'z' }]));
    c.ingest(null);
    const want = { 'rollout_errors/TypeError': 2, 'rollout_errors/RangeError': 1, 'rollout_errors/total': 3, 'rollout_errors/groups_skipped': 1 };
    expect(c.getMetrics()).toEqual(want);
    expect(new RolloutErrorCounter(JSON.parse(JSON.stringify(c.toJSON()))).getMetrics()).toEqual(want);
    expect(Object.keys(new RolloutErrorCounter({ counts: [], groupsSkipped: 2 }).getMetrics('test/rollout_errors'))).toEqual([
      'test/rollout_errors/total',
      'test/rollout_errors/groups_skipped',
    ]);
  });
  it('maps rollout_error_tolerance like the reference', () => {
    expect(resolveRolloutStrategyConfig(null, 'Qwen/Qwen3-8B')).toEqual({ kind: 'fail_fast' });
    expect(resolveRolloutStrategyConfig(null, 'thinkingmachines/Inkling-1')).toEqual({ kind: 'min_viable_group' });
    expect(resolveRolloutStrategyConfig(false, 'x')).toEqual({ kind: 'fail_fast' });
    expect(resolveRolloutStrategyConfig(true, 'x')).toEqual({ kind: 'retry_on_failure', max_retries: 3 });
  });
});

describe('per_rollout_timeout (the reference RetryOnFailure / MinViableGroup field)', () => {
  const base = { model_name: 'tiny-qwen3', max_tokens: 4, dataset: { kind: 'arithmetic', batch_size: 1, group_size: 4 } };
  const strategyOf = (tolerance: unknown) => strategyFromConfig(resolveRolloutStrategyConfig(RLConfigSchema.parse({ ...base, rollout_error_tolerance: tolerance }).rollout_error_tolerance, 'tiny-qwen3'));
  /** Env ids in `hang` never answer; the others answer with their id. */
  const hangingOn =
    (hang: Set<number>): TokenCompleter =>
    async (ob, stop) =>
      hang.has((ob.chunks[0] as { tokens: number[] }).tokens[1]) ? new Promise(() => {}) : echoPolicy(ob, stop);

  it('has the reference defaults: 0 (off) for retry_on_failure, null (off) for min_viable_group', () => {
    expect(RLConfigSchema.parse({ ...base, rollout_error_tolerance: { kind: 'retry_on_failure' } }).rollout_error_tolerance).toEqual({ kind: 'retry_on_failure', max_retries: 3, per_rollout_timeout: 0 });
    expect(RLConfigSchema.parse({ ...base, rollout_error_tolerance: { kind: 'min_viable_group' } }).rollout_error_tolerance).toEqual({
      kind: 'min_viable_group',
      min_successful: null,
      max_retries: 3,
      per_rollout_timeout: null,
    });
    const bad = RLConfigSchema.safeParse({ ...base, rollout_error_tolerance: { kind: 'retry_on_failure', per_rollout_timeout: -1 } });
    expect(bad.success).toBe(false);
  });

  it('retry_on_failure: a rollout past the deadline is retried on a fresh env and counted as TimeoutError', async () => {
    const b = new FakeBuilder(4);
    const g = await doGroupRollout(b, hangingOn(new Set([1])), strategyOf({ kind: 'retry_on_failure', max_retries: 1, per_rollout_timeout: 0.05 }));
    // Slot 1 ran again in env 4 (the first of a fresh makeEnvs()).
    expect(g.getTotalRewards()).toEqual([0, 4, 2, 3]);
    expect(g.rolloutErrors.map((e) => e.errorType)).toEqual(['TimeoutError']);
    const counter = new RolloutErrorCounter();
    counter.ingest(g);
    expect(counter.getMetrics()).toEqual({ 'rollout_errors/TimeoutError': 1, 'rollout_errors/total': 1, 'rollout_errors/groups_skipped': 0 });
  });

  it('retry_on_failure: past the retry budget the group is dropped (groups_skipped), not trained partially', async () => {
    const g = await doGroupRolloutAndFilterConstantReward(new FakeBuilder(4), hangingOn(new Set([1, 4])), {
      strategy: strategyOf({ kind: 'retry_on_failure', max_retries: 1, per_rollout_timeout: 0.05 }),
    });
    expect(g).toBeNull();
  });

  it('min_viable_group: timed-out rollouts leave a partial group when the floor is met', async () => {
    const g = await doGroupRollout(new FakeBuilder(4), hangingOn(new Set([3])), strategyOf({ kind: 'min_viable_group', max_retries: 0, per_rollout_timeout: 0.05 }));
    expect(g.getTotalRewards()).toEqual([0, 1, 2]);
    expect(g.rolloutErrors.map((e) => e.errorType)).toEqual(['TimeoutError']);
  });
});
