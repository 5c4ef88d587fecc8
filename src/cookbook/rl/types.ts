// RL core types (spec §2.1, reference tc/rl/types.py + tc/completers.py::TokensWithLogprobs).
// Everything here is plain data or small interfaces so trajectories can be serialised between
// activities (claim check, DESIGN §3.3); behaviour lives in envs and builders.

import type { ModelInput } from '../../backends/types.js';
import { CookbookError } from '../errors.js';
import type { ParseErrorPolicy, RolloutLimits } from './rollout-limits.js';
import type { RolloutHooks } from './rollout-hooks.js';
import type { Message } from '../renderers/types.js';

export type Action = number[];
export type Observation = ModelInput;
export type Logprobs = number[];
export type Metrics = Record<string, number>;
export type Logs = Record<string, string | number>;

/** Stop sequences as strings or token ids (renderer.getStopSequences()). */
export type StopCondition = string[] | number[];

export const StopReason = {
  COMPLETED: 'completed',
  TOOL_STOPPED: 'tool_stopped',
  MAX_TURNS: 'max_turns',
  MAX_TOKENS: 'max_tokens',
  MAX_SAMPLED_TOKENS: 'max_sampled_tokens',
  MAX_TOOL_CALLS: 'max_tool_calls',
  CONTEXT_OVERFLOW: 'context_overflow',
  PARSE_ERROR: 'parse_error',
  ROLLOUT_TIMEOUT: 'rollout_timeout',
} as const;
export type StopReason = (typeof StopReason)[keyof typeof StopReason];

export const STOP_METRIC_PREFIX = 'stop/';
export const PARSE_ERROR_MASKED_METRIC_KEY = 'parse_error_masked';

/** How the sampler ended a sequence. */
export type SampleStopReason = 'stop' | 'length';

/** Sampled tokens with their logprobs (None when the sampler did not return them). */
export interface TokensWithLogprobs {
  tokens: number[];
  maybeLogprobs: number[] | null;
  stopReason: SampleStopReason;
  /**
   * The sampler's id of this sequence (SDK 0.38 SampledSequence.sequence_id), which provenance
   * spans name; absent when the sampler gave none.
   */
  sequenceId?: string;
  /**
   * Prompt tokens the sampler billed as prefix-cache hits for this sample (SampleResponse
   * prompt_cache_hit_tokens); absent: 0, as the reference's default.
   */
  promptCacheHitTokens?: number;
}

export function tokensWithLogprobs(
  tokens: number[],
  maybeLogprobs: number[] | null,
  stopReason: SampleStopReason = 'stop',
): TokensWithLogprobs {
  return { tokens, maybeLogprobs, stopReason };
}

/** The reference's `.logprobs` property: raises when the logprobs are missing. */
export function getLogprobs(ac: TokensWithLogprobs): number[] {
  if (ac.maybeLogprobs === null || ac.maybeLogprobs === undefined) {
    throw new CookbookError('Logprobs are not available');
  }
  return ac.maybeLogprobs;
}

export interface ActionExtra {
  stop_reason?: SampleStopReason;
}

export interface StepResult {
  reward: number;
  episodeDone: boolean;
  nextObservation: Observation;
  nextStopCondition: StopCondition;
  metrics?: Metrics;
  logs?: Logs;
}

/** Returned by `initialObservation()` when the prompt alone does not fit. */
export class InitialObservationOverflow {
  constructor(
    readonly reward: number,
    readonly metrics: Metrics = {},
    readonly logs: Logs = {},
  ) {}
}

export interface InitialObservation {
  ob: Observation;
  stopCondition: StopCondition;
}

/** A single-use environment. */
export interface Env {
  initialObservation(): Promise<InitialObservation | InitialObservationOverflow>;
  step(action: Action, opts?: { extra?: ActionExtra }): Promise<StepResult>;
  /** Budgets the rollout runner enforces when it is given none of its own (the reference's fallback). */
  rolloutLimits?: RolloutLimits | null;
  /** Called when this env's rollout failed: release anything other envs of the group wait on. */
  abandon?(): void;
  /** Hooks the runner calls when it is given none of its own (set by bindRollout from the config). */
  rolloutHooks?: RolloutHooks | null;
  /** The parse-error policy the runner pushes at rollout start when it is given none of its own. */
  parseErrorPolicy?: ParseErrorPolicy | null;
  /** Seam for `limits.max_tool_calls` (reference SupportsToolCallLimit): tool dispatch is the env's. */
  setMaxToolCalls?(maxToolCalls: number): void;
  /** Seam for a ParseErrorPolicy (reference SupportsParseErrorPolicy): parsing is the env's. */
  setParseErrorPolicy?(policy: ParseErrorPolicy): void;
  /** Seam for `on_turn_begin` injection: append messages, answer the re-rendered observation. */
  injectMessages?(messages: Message[]): Promise<InitialObservation>;
}

export interface Transition {
  ob: Observation;
  ac: TokensWithLogprobs;
  reward: number;
  episodeDone: boolean;
  metrics: Metrics;
  logs: Logs;
}

export interface Trajectory {
  transitions: Transition[];
  finalOb: Observation;
  stopReason: StopReason | string | null;
}

export interface RolloutError {
  errorType: string;
  errorMessage: string;
}

/** A group of rollouts of the same problem; `finalRewardsG` come from `computeGroupRewards`. */
export class TrajectoryGroup {
  constructor(
    readonly trajectoriesG: Trajectory[],
    readonly finalRewardsG: number[],
    readonly metricsG: Metrics[],
    readonly rolloutErrors: RolloutError[] = [],
  ) {
    if (trajectoriesG.length !== finalRewardsG.length || trajectoriesG.length !== metricsG.length) {
      throw new RangeError(
        `TrajectoryGroup: ${trajectoriesG.length} trajectories, ${finalRewardsG.length} rewards, ${metricsG.length} metrics`,
      );
    }
  }

  /** Σ step rewards + final group reward per trajectory (float64, like Python floats). */
  getTotalRewards(): number[] {
    return this.trajectoriesG.map((traj, g) => {
      let s = 0;
      for (const t of traj.transitions) s += t.reward;
      return s + this.finalRewardsG[g];
    });
  }
}

/** Builds a group of envs for one problem, and grades the group once it has been rolled out. */
export interface EnvGroupBuilder {
  makeEnvs(): Promise<Env[]>;
  /** One (reward, metrics) per trajectory; the default is (0, {}) for each. */
  computeGroupRewards(trajectoryGroup: Trajectory[], envGroup: Env[]): Promise<Array<[number, Metrics]>>;
  /** Always called once the group is done, in a `finally`. */
  cleanup(): Promise<void>;
  loggingTags(): string[];
}

/** Defaults of the reference's EnvGroupBuilder base class. */
export abstract class BaseEnvGroupBuilder implements EnvGroupBuilder {
  abstract makeEnvs(): Promise<Env[]>;
  async computeGroupRewards(trajectoryGroup: Trajectory[], _envGroup: Env[]): Promise<Array<[number, Metrics]>> {
    return trajectoryGroup.map(() => [0, {}]);
  }
  async cleanup(): Promise<void> {}
  loggingTags(): string[] {
    return [];
  }
}

export interface RLDataset {
  readonly length: number;
  getBatch(index: number): EnvGroupBuilder[];
  /**
   * Metrics of a whole evaluated test set beyond the per-rollout means (the reference's
   * RLTestSetEvaluator subclasses that extend _collect_eval_metrics, e.g. forecasting's AUC):
   * `env/<tag>/…` keys, prefixed `test/` with the rest. Given the groups that rolled out and their tags.
   */
  evalSetMetrics?(groups: readonly TrajectoryGroup[], tagsPerGroup: readonly string[][]): Metrics;
}

/** Every rollout of a group failed (or fewer than a MinViableGroup floor succeeded). */
export class AllTrajectoriesFailedError extends CookbookError {}

/** A rollout exceeded its per-rollout timeout. */
export class RolloutTimeoutError extends CookbookError {}
