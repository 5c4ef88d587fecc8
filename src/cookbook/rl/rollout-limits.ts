// Rollout limits and the termination reward policy (reference 0.6.1 rl/rollout_limits.py): the same
// field names, defaults and validation, as zod schemas so configs and envs share them.
//
// Durability of wall-clock limits: `rollout_timeout_seconds` and `sampling_turn_timeout_seconds`
// depend on time, which no replay can reproduce. They are applied inside the rollout activity only,
// and the activity writes the finished group (with any `rollout_timeout` stop) to the run store
// before it returns its reference; the train step reads that blob back. So once a group is recorded,
// every recovery trains on exactly what was recorded. A rollout activity that dies before recording
// recomputes the group from its seeds with a fresh clock — the same result whenever no timeout fires,
// which is why the CI configs leave these limits unset and use the token/turn limits, which are
// deterministic.
import { z } from 'zod';
import { CookbookError } from '../errors.js';
import { StopReason, type Metrics, type Trajectory } from './types.js';

const positiveOrNull = (kind: 'int' | 'number') =>
  (kind === 'int' ? z.int() : z.number())
    .refine((v) => v > 0, { message: 'must be a positive value or null (unlimited)' })
    .nullable()
    .default(null);

export const DEFAULT_RETRY_MESSAGE_TEMPLATE = 'The previous message had a formatting issue.\nError: {details}';

/**
 * How a rollout answers parse failures of the policy's message (reference ParseErrorPolicy).
 * Structural failures (no stop signal: the message boundary is unknown) always end the episode with
 * `parse_error` and `terminal_reward`; content failures (clean framing, unparsable tool calls) are
 * retried up to `max_consecutive` times by an env that supports it. With no policy, the one-shot
 * `failed_parse_reward` / `terminate_on_parse_error` semantics apply unchanged.
 */
export const ParseErrorPolicySchema = z.strictObject({
  max_consecutive: z.int().nonnegative().default(0),
  retry_message_template: z
    .string()
    .refine((t) => t.includes('{details}'), { message: "must contain the '{details}' placeholder" })
    .default(DEFAULT_RETRY_MESSAGE_TEMPLATE),
  penalty_per_error: z.number().nonnegative().default(0.0),
  terminal_reward: z.number().default(0.0),
  mask_error_turns: z.boolean().default(false),
});
export type ParseErrorPolicy = z.output<typeof ParseErrorPolicySchema>;
export type ParseErrorPolicyInput = z.input<typeof ParseErrorPolicySchema>;

/** Budgets of one rollout; every one defaults to null (unlimited). */
export const RolloutLimitsSchema = z.strictObject({
  max_turns: positiveOrNull('int'),
  max_trajectory_tokens: positiveOrNull('int'),
  max_sampled_tokens: positiveOrNull('int'),
  max_tool_calls: positiveOrNull('int'),
  max_turn_tokens: positiveOrNull('int'),
  rollout_timeout_seconds: positiveOrNull('number'),
  sampling_turn_timeout_seconds: positiveOrNull('number'),
});
export type RolloutLimits = z.output<typeof RolloutLimitsSchema>;
export type RolloutLimitsInput = z.input<typeof RolloutLimitsSchema>;

export const DEFAULT_LIMIT_STOP_REASONS: readonly string[] = [
  StopReason.MAX_TOKENS,
  StopReason.MAX_SAMPLED_TOKENS,
  StopReason.MAX_TURNS,
  StopReason.MAX_TOOL_CALLS,
  StopReason.ROLLOUT_TIMEOUT,
];

/** How rewards interact with the stop reason a trajectory ended with (grade, then clamp). */
export const TerminationRewardPolicySchema = z.strictObject({
  zero_reward_on_limit: z.boolean().default(false),
  limit_stop_reasons: z.array(z.string()).default([...DEFAULT_LIMIT_STOP_REASONS]),
  skip_grading_on_timeout: z.boolean().default(false),
  grader_timeout_seconds: positiveOrNull('number'),
  pass_all_messages_to_grader: z.boolean().default(false),
});
export type TerminationRewardPolicy = z.output<typeof TerminationRewardPolicySchema>;

/** The termination half of the reference's `agentic()` preset (Inkling models' default). */
export const AGENTIC_TERMINATION: TerminationRewardPolicy = TerminationRewardPolicySchema.parse({
  zero_reward_on_limit: true,
  skip_grading_on_timeout: true,
  grader_timeout_seconds: 900,
});

/** `Config.effective_termination()`: the configured policy, else the model's default. */
export function effectiveTermination(policy: TerminationRewardPolicy | null | undefined, modelName: string): TerminationRewardPolicy | null {
  if (policy) return policy;
  return modelName.split(':', 1)[0].startsWith('thinkingmachines/Inkling') ? AGENTIC_TERMINATION : null;
}

/** A single sampling call ran past `sampling_turn_timeout_seconds` (raises: no partial turn to keep). */
export class SamplingTurnTimeoutError extends CookbookError {}

/** A grader ran past `grader_timeout_seconds`. */
export class GraderTimeoutError extends CookbookError {}

/** Skip grading only when it cannot change the clamped outcome: every trajectory timed out. */
export function shouldSkipGroupGrading(policy: TerminationRewardPolicy | null | undefined, trajectories: readonly Trajectory[]): boolean {
  return (
    !!policy &&
    policy.skip_grading_on_timeout &&
    policy.zero_reward_on_limit &&
    policy.limit_stop_reasons.includes(StopReason.ROLLOUT_TIMEOUT) &&
    trajectories.length > 0 &&
    trajectories.every((t) => t.stopReason === StopReason.ROLLOUT_TIMEOUT)
  );
}

/**
 * Grade-then-clamp: a limit-stopped trajectory whose total (step rewards + group reward) is positive
 * gets the group reward −Σ step rewards, so its total is exactly 0. Negative totals stand.
 */
export function applyZeroRewardOnLimit(
  policy: TerminationRewardPolicy,
  trajectories: readonly Trajectory[],
  rewardsG: number[],
  metricsG: Metrics[],
): void {
  if (!policy.zero_reward_on_limit) return;
  trajectories.forEach((traj, g) => {
    if (traj.stopReason === null || !policy.limit_stop_reasons.includes(traj.stopReason)) return;
    let stepSum = 0;
    for (const t of traj.transitions) stepSum += t.reward;
    if (stepSum + rewardsG[g] > 0) {
      rewardsG[g] = -stepSum;
      metricsG[g] = { ...metricsG[g], zero_reward_on_limit: 1.0 };
    }
  });
}

/** Rejects after `seconds` with `make()`; null/undefined = no bound. */
export async function withinSeconds<T>(work: Promise<T>, seconds: number | null | undefined, make: () => Error): Promise<T> {
  if (seconds === null || seconds === undefined) return work;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(make()), seconds * 1000);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
