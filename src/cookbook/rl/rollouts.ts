// Single and group rollouts (spec §2.3) and the rollout strategies (spec §2.8).
//
// Determinism (DESIGN §3.2) changes two details against the reference, on purpose:
//   * trajectories come back in env (slot) order, not completion order;
//   * failures are handled in rounds: every pending rollout of a round settles, then the failures
//     are visited in slot order to spend the retry budget. Which rollout gets retried therefore
//     never depends on timing, and the retry/raise outcome equals the reference's (a group fails
//     exactly when more rollouts fail than the budget allows).
// Retries use a fresh env from `builder.makeEnvs()[0]`; the policy for a retry is asked for with
// its slot and attempt number so callers can seed it from the logical position.

import { BackendError } from '../../backends/types.js';
import { ServiceUnavailableError } from '../errors.js';
import type { TokenCompleter } from './completers.js';
import { applyZeroRewardOnLimit, GraderTimeoutError, shouldSkipGroupGrading, withinSeconds, type TerminationRewardPolicy } from './rollout-limits.js';
import { runRollout } from './rollout-runner.js';
import { scopeSpan } from '../timing.js';
import {
  AllTrajectoriesFailedError,
  RolloutTimeoutError,
  TrajectoryGroup,
  type Env,
  type EnvGroupBuilder,
  type Metrics,
  type RolloutError,
  type Trajectory,
} from './types.js';

/** Which rollout of a group a policy serves: env slot and attempt (0 = first try). */
export interface RolloutSlot {
  sampleIndex: number;
  attempt: number;
}

/** A policy per rollout, so each can get its own deterministic seeds. */
export interface RolloutPolicyFactory {
  forRollout(slot: RolloutSlot): TokenCompleter;
}

export type PolicySource = TokenCompleter | RolloutPolicyFactory;

function policyFor(source: PolicySource, slot: RolloutSlot): TokenCompleter {
  return typeof source === 'function' ? source : source.forRollout(slot);
}

/**
 * Run one env to completion with the policy (the reference's `run_rollout` with the env's limits).
 * A failed rollout abandons its env, so envs that share state (the players of one game) stop waiting.
 */
export async function doSingleRollout(policy: TokenCompleter, env: Env): Promise<Trajectory> {
  try {
    return await runRollout(policy, env);
  } catch (e) {
    env.abandon?.();
    throw e;
  }
}

/** Cancellation is never turned into a recorded rollout error. */
export function isCancellation(e: unknown): boolean {
  const name = (e as { name?: unknown } | null)?.name;
  return name === 'AbortError' || name === 'CancelledFailure' || name === 'CancelledError';
}

/**
 * Failures no strategy may absorb: cancellation, the training backend's own errors and a service a
 * tool needs being out of reach (ServiceUnavailableError: the sandbox server) — those are
 * infrastructure, not the env's fault. They propagate so the whole group is retried with the same
 * seeds; absorbing one would resample with a fresh env and make the run depend on an outage.
 */
export function passesThrough(e: unknown): boolean {
  return isCancellation(e) || e instanceof BackendError || e instanceof ServiceUnavailableError;
}

function toRolloutError(e: unknown): RolloutError {
  // The reference's deadline is asyncio.wait_for, whose TimeoutError names the metric
  // (rollout_errors/TimeoutError).
  if (e instanceof RolloutTimeoutError) return { errorType: 'TimeoutError', errorMessage: e.message };
  // Python records type(e).__name__; the constructor name is the closest JS equivalent.
  if (e instanceof Error) return { errorType: e.constructor?.name || e.name, errorMessage: e.message };
  return { errorType: typeof e, errorMessage: String(e) };
}

export interface StrategyResult {
  /** Successful trajectories in slot order. */
  trajectories: Trajectory[];
  /** The env each trajectory ran in (a fresh one for a retried slot). */
  envs: Env[];
  errors: RolloutError[];
}

export interface RolloutStrategy {
  readonly kind: 'fail_fast' | 'retry_on_failure' | 'min_viable_group';
  /** Whether a group-level error drops the group (null) instead of failing the batch. */
  readonly catchesGroupErrors: boolean;
  execute(builder: EnvGroupBuilder, policy: PolicySource): Promise<StrategyResult>;
}

export function failFast(): RolloutStrategy {
  return {
    kind: 'fail_fast',
    catchesGroupErrors: false,
    async execute(builder, policy) {
      const envs = await builder.makeEnvs();
      const trajectories = await Promise.all(
        envs.map((env, i) => doSingleRollout(policyFor(policy, { sampleIndex: i, attempt: 0 }), env)),
      );
      return { trajectories, envs, errors: [] };
    },
  };
}

interface Slot {
  env: Env;
  attempt: number;
  traj?: Trajectory;
}

/**
 * Rounds of concurrent rollouts. After each round `decide(failedSlotIndex, successes)` says
 * whether to retry that slot, 'raise' to abort with its error, or 'give_up' to leave it failed.
 */
async function runInRounds(
  builder: EnvGroupBuilder,
  policy: PolicySource,
  timeoutSeconds: number | null | undefined,
  decide: (successes: number, scheduledRetries: number) => 'retry' | 'raise' | 'give_up',
): Promise<{ slots: Slot[]; errors: RolloutError[] }> {
  const slots: Slot[] = (await builder.makeEnvs()).map((env) => ({ env, attempt: 0 }));
  const errors: RolloutError[] = [];
  let pending = slots.map((_, i) => i);
  while (pending.length > 0) {
    const settled = await Promise.allSettled(
      pending.map((i) =>
        withinSeconds(
          doSingleRollout(policyFor(policy, { sampleIndex: i, attempt: slots[i].attempt }), slots[i].env),
          timeoutSeconds && timeoutSeconds > 0 ? timeoutSeconds : null, // 0 = no per-rollout timeout
          () => {
            // The reference cancels the task; a promise cannot be, so the env is abandoned (its
            // co-players stop waiting) and what it still returns is ignored.
            slots[i].env.abandon?.();
            return new RolloutTimeoutError(`rollout exceeded per_rollout_timeout=${timeoutSeconds}s`);
          },
        ),
      ),
    );
    const failed: Array<{ i: number; reason: unknown }> = [];
    settled.forEach((r, k) => {
      if (r.status === 'fulfilled') slots[pending[k]].traj = r.value;
      else failed.push({ i: pending[k], reason: r.reason });
    });
    const fatal = failed.find((f) => passesThrough(f.reason));
    if (fatal) throw fatal.reason;
    const successes = slots.filter((s) => s.traj !== undefined).length;
    const retry: number[] = [];
    for (const f of failed) {
      errors.push(toRolloutError(f.reason));
      const verdict = decide(successes, retry.length);
      if (verdict === 'raise') throw f.reason;
      if (verdict === 'retry') retry.push(f.i);
    }
    for (const i of retry) {
      const fresh = await builder.makeEnvs();
      if (fresh.length === 0) throw new Error('makeEnvs() returned no envs for a retry');
      slots[i] = { env: fresh[0], attempt: slots[i].attempt + 1 };
    }
    pending = retry;
  }
  return { slots, errors };
}

function collect(slots: Slot[], errors: RolloutError[]): StrategyResult {
  const ok = slots.filter((s) => s.traj !== undefined);
  return { trajectories: ok.map((s) => s.traj as Trajectory), envs: ok.map((s) => s.env), errors };
}

export interface RetryOnFailureOptions {
  maxRetries?: number;
  /** Seconds; 0 or absent = no per-rollout timeout. */
  perRolloutTimeout?: number | null;
}

/** All-or-nothing: each failure spends one retry on a fresh env; past the budget the group fails. */
export function retryOnFailure(opts: RetryOnFailureOptions = {}): RolloutStrategy {
  const maxRetries = opts.maxRetries ?? 3;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new RangeError(`maxRetries must be ≥ 0, got ${maxRetries}`);
  return {
    kind: 'retry_on_failure',
    catchesGroupErrors: true,
    async execute(builder, policy) {
      let budget = maxRetries;
      const { slots, errors } = await runInRounds(builder, policy, opts.perRolloutTimeout, () => {
        if (budget <= 0) return 'raise';
        budget--;
        return 'retry';
      });
      return collect(slots, errors);
    },
  };
}

export interface MinViableGroupOptions {
  minSuccessful?: number | null;
  maxRetries?: number;
  perRolloutTimeout?: number | null;
}

/** The floor of a MinViableGroup: `minSuccessful`, or ceil(0.75·G). */
export function minViableFloor(groupSize: number, minSuccessful?: number | null): number {
  return minSuccessful ?? Math.ceil(0.75 * groupSize);
}

/** Keep a partial group when at least the floor succeeded; retry only what the floor needs. */
export function minViableGroup(opts: MinViableGroupOptions = {}): RolloutStrategy {
  const maxRetries = opts.maxRetries ?? 3;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new RangeError(`maxRetries must be ≥ 0, got ${maxRetries}`);
  return {
    kind: 'min_viable_group',
    catchesGroupErrors: true,
    async execute(builder, policy) {
      let budget = maxRetries;
      let floor = 0;
      const wrapped: EnvGroupBuilder = {
        makeEnvs: async () => {
          const envs = await builder.makeEnvs();
          if (floor === 0) floor = minViableFloor(envs.length, opts.minSuccessful);
          return envs;
        },
        computeGroupRewards: (t, e) => builder.computeGroupRewards(t, e),
        cleanup: () => builder.cleanup(),
        loggingTags: () => builder.loggingTags(),
      };
      const { slots, errors } = await runInRounds(wrapped, policy, opts.perRolloutTimeout, (successes, scheduled) => {
        if (successes + scheduled < floor && budget > 0) {
          budget--;
          return 'retry';
        }
        return 'give_up';
      });
      const result = collect(slots, errors);
      if (result.trajectories.length < floor) {
        throw new AllTrajectoriesFailedError(
          `Only ${result.trajectories.length}/${slots.length} rollouts succeeded (need ${floor}); errors: ` +
            errors.map((e) => `${e.errorType}: ${e.errorMessage}`).join('; '),
        );
      }
      return result;
    },
  };
}

/** Serialisable strategy settings for configs and workflow state. */
export type RolloutStrategyConfig =
  | { kind: 'fail_fast' }
  | { kind: 'retry_on_failure'; max_retries?: number; per_rollout_timeout?: number | null }
  | { kind: 'min_viable_group'; min_successful?: number | null; max_retries?: number; per_rollout_timeout?: number | null };

export function strategyFromConfig(cfg: RolloutStrategyConfig): RolloutStrategy {
  switch (cfg.kind) {
    case 'fail_fast':
      return failFast();
    case 'retry_on_failure':
      return retryOnFailure({ maxRetries: cfg.max_retries, perRolloutTimeout: cfg.per_rollout_timeout });
    case 'min_viable_group':
      return minViableGroup({ minSuccessful: cfg.min_successful, maxRetries: cfg.max_retries, perRolloutTimeout: cfg.per_rollout_timeout });
  }
}

/**
 * `rollout_error_tolerance` (spec §2.7): null → MinViableGroup for Inkling models, else FailFast;
 * false → FailFast; true → RetryOnFailure(3); a config object is used as given.
 */
export function resolveRolloutStrategyConfig(
  tolerance: boolean | null | undefined | RolloutStrategyConfig,
  modelName: string,
): RolloutStrategyConfig {
  if (tolerance === null || tolerance === undefined) {
    return modelName.startsWith('thinkingmachines/Inkling') ? { kind: 'min_viable_group' } : { kind: 'fail_fast' };
  }
  if (tolerance === false) return { kind: 'fail_fast' };
  if (tolerance === true) return { kind: 'retry_on_failure', max_retries: 3 };
  return tolerance;
}

/**
 * Roll out a group with the strategy, grade it (bounded by the termination policy's grader timeout,
 * skipped when every rollout timed out and would be clamped anyway), clamp limit-stopped rewards,
 * and always clean up the builder.
 */
export async function doGroupRollout(
  builder: EnvGroupBuilder,
  policy: PolicySource,
  strategy: RolloutStrategy = failFast(),
  termination: TerminationRewardPolicy | null = null,
): Promise<TrajectoryGroup> {
  try {
    const result = await strategy.execute(builder, policy);
    const seconds = termination?.grader_timeout_seconds ?? null;
    const rewards = shouldSkipGroupGrading(termination, result.trajectories)
      ? result.trajectories.map((): [number, Metrics] => [0, {}])
      : await scopeSpan('compute_group_rewards', () =>
          withinSeconds(builder.computeGroupRewards(result.trajectories, result.envs), seconds, () => new GraderTimeoutError(`compute_group_rewards exceeded grader_timeout_seconds=${seconds}`)),
        );
    if (rewards.length !== result.trajectories.length) {
      throw new RangeError(`computeGroupRewards returned ${rewards.length} rewards for ${result.trajectories.length} trajectories`);
    }
    const rewardsG = rewards.map((r) => r[0]);
    const metricsG = rewards.map((r) => r[1]);
    if (termination) applyZeroRewardOnLimit(termination, result.trajectories, rewardsG, metricsG);
    return new TrajectoryGroup(result.trajectories, rewardsG, metricsG, result.errors);
  } finally {
    await builder.cleanup();
  }
}

export interface GroupRolloutOptions {
  strategy?: RolloutStrategy;
  termination?: TerminationRewardPolicy | null;
  doRemoveConstantRewardGroups?: boolean;
  /** Called with a warning line when a group is dropped. */
  onWarning?: (message: string) => void;
}

/**
 * `do_group_rollout_and_filter_constant_reward` minus the sampler construction: null when every
 * trajectory failed, when a catching strategy hit a group error, or when constant-reward groups
 * are removed and this one is constant. Other errors propagate.
 */
export function doGroupRolloutAndFilterConstantReward(
  builder: EnvGroupBuilder,
  policy: PolicySource,
  opts: GroupRolloutOptions = {},
): Promise<TrajectoryGroup | null> {
  // Timed under the reference's function name (its @trace.scope), where an activity records spans.
  return scopeSpan('do_group_rollout_and_filter_constant_reward', () => groupRolloutAndFilter(builder, policy, opts));
}

async function groupRolloutAndFilter(builder: EnvGroupBuilder, policy: PolicySource, opts: GroupRolloutOptions): Promise<TrajectoryGroup | null> {
  const strategy = opts.strategy ?? failFast();
  let group: TrajectoryGroup;
  try {
    group = await doGroupRollout(builder, policy, strategy, opts.termination ?? null);
  } catch (e) {
    if (passesThrough(e)) throw e;
    if (e instanceof AllTrajectoriesFailedError || strategy.catchesGroupErrors) {
      opts.onWarning?.(`Dropping group: ${(e as Error).message}`);
      return null;
    }
    throw e;
  }
  if (opts.doRemoveConstantRewardGroups) {
    const totals = group.getTotalRewards();
    if (totals.every((r) => r === totals[0])) return null;
  }
  return group;
}

export interface RolloutErrorCounterState {
  counts: Array<[string, number]>;
  groupsSkipped: number;
}

/** Cumulative rollout error counts for a run; its state is plain JSON for workflow state. */
export class RolloutErrorCounter {
  private readonly counts = new Map<string, number>();
  private groupsSkipped = 0;

  constructor(state?: RolloutErrorCounterState) {
    if (state) {
      for (const [k, v] of state.counts) this.counts.set(k, v);
      this.groupsSkipped = state.groupsSkipped;
    }
  }

  ingest(result: TrajectoryGroup | { rolloutErrors: RolloutError[] } | null): void {
    if (result === null) {
      this.groupsSkipped++;
      return;
    }
    for (const err of result.rolloutErrors) this.counts.set(err.errorType, (this.counts.get(err.errorType) ?? 0) + 1);
  }

  getMetrics(prefix = 'rollout_errors'): Record<string, number> {
    const out: Record<string, number> = {};
    if (this.counts.size === 0 && this.groupsSkipped === 0) return out;
    let total = 0;
    for (const [k, v] of this.counts) {
      out[`${prefix}/${k}`] = v;
      total += v;
    }
    out[`${prefix}/total`] = total;
    out[`${prefix}/groups_skipped`] = this.groupsSkipped;
    return out;
  }

  toJSON(): RolloutErrorCounterState {
    return { counts: [...this.counts.entries()], groupsSkipped: this.groupsSkipped };
  }
}
