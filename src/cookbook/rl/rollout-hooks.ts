// Rollout hooks (reference 0.6.1 rl/rollout_runner.py RolloutHooks): callbacks into the rollout loop
// that inject messages before a turn and accept, override or clear a stop. Configs are data, so a
// config names a hook registered here (`rollout_hooks: {name, args}`), as it names an env.
//
// Determinism: a recomputed rollout must equal the first one, so a registered hook decides only
// from the RolloutState's counts and transitions and from `seedFor` (seeded from the rollout's
// logical position) — never from `elapsedSeconds`, a clock or Math.random.
import { z } from 'zod';
import { ConfigurationError } from '../errors.js';
import type { Message } from '../renderers/types.js';
import { STOP_METRIC_PREFIX, StopReason, type Transition } from './types.js';

/** Progress of one rollout, as hooks see it (a live view: hooks must not mutate it). */
export interface RolloutState {
  /** Completed policy calls (0 on the first on_turn_begin). */
  turnIndex: number;
  /** Length of the current observation (the next sampling prompt). */
  observationTokens: number;
  sampledTokens: number;
  /** Per-turn "length" stops the rollout continued past. */
  numLengthTruncations: number;
  /** Wall-clock seconds since the rollout started; registered hooks must not read it (see above). */
  elapsedSeconds: number;
  transitions: readonly Transition[];
}

export interface RolloutHooks {
  /** Messages to inject before this turn's sampling call (the env must support injection), or null. */
  onTurnBegin?(state: RolloutState): Promise<Message[] | null>;
  /** The stop to record: `reason` accepts, another string overrides, null clears it and continues. */
  onStopReason?(reason: string, state: RolloutState): Promise<string | null>;
  /** After the env finished a terminal step (its grading ran); not for runner-imposed stops. */
  onGrade?(state: RolloutState): Promise<void>;
  /** Right before the trajectory is returned, on every graceful path. */
  onArtifacts?(state: RolloutState): Promise<void>;
}

export interface RolloutHookContext {
  /** Seeds of this hook in this rollout, one per call (for any randomness a hook needs). */
  seedFor: () => number;
}

interface RegisteredHook {
  args: z.ZodType<Record<string, unknown>>;
  make(args: Record<string, unknown>, ctx: RolloutHookContext): RolloutHooks;
}

const HOOKS = new Map<string, RegisteredHook>();

/** Register hooks under a name a config can select; `make` is called once per rollout (env). */
export function registerRolloutHook<S extends z.ZodType<Record<string, unknown>>>(name: string, args: S, make: (args: z.output<S>, ctx: RolloutHookContext) => RolloutHooks): void {
  if (HOOKS.has(name)) throw new ConfigurationError(`rollout hook '${name}' is already registered`);
  HOOKS.set(name, { args, make: (a, ctx) => make(a as z.output<S>, ctx) });
}

export function rolloutHookNames(): string[] {
  return [...HOOKS.keys()].sort();
}

export const RolloutHooksConfigSchema = z.strictObject({
  name: z.string().min(1),
  args: z.record(z.string(), z.unknown()).default({}),
});
export type RolloutHooksConfig = z.output<typeof RolloutHooksConfigSchema>;

/** The first problem with a registered hook's args (a path inside `args`), or null when they parse. */
export function rolloutHookArgsIssue(cfg: RolloutHooksConfig): { path: PropertyKey[]; message: string } | null {
  const parsed = HOOKS.get(cfg.name)?.args.safeParse(cfg.args);
  if (!parsed || parsed.success) return null;
  return { path: parsed.error.issues[0].path, message: parsed.error.issues[0].message };
}

/** A factory of one hooks object per rollout; the config path names a bad name or bad args. */
export function resolveRolloutHooks(cfg: RolloutHooksConfig, path = 'rollout_hooks'): (ctx: RolloutHookContext) => RolloutHooks {
  const hook = HOOKS.get(cfg.name);
  if (!hook) throw new ConfigurationError(`${path}.name: unknown rollout hook '${cfg.name}' (registered: ${rolloutHookNames().join(', ')})`);
  const parsed = hook.args.safeParse(cfg.args);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigurationError(`${path}.args${issue.path.length ? '.' + issue.path.join('.') : ''}: ${issue.message}`);
  }
  return (ctx) => hook.make(parsed.data, ctx);
}

export const DEFAULT_LENGTH_NUDGE = 'Your previous reply was cut off at the token limit. Answer again, briefly.';

/**
 * `nudge_on_length` (ours; the reference ships no hook): after a turn the sampler truncated, inject
 * a user nudge before the next turn. The env's `max_tokens` stop on a cut turn (the message-env
 * adapter ends the episode there) is cleared so the nudge gets its turn; a runner budget stop
 * stands. At most `max_nudges` nudges a rollout.
 */
export function nudgeOnLength(args: { max_nudges: number; message: string }): RolloutHooks {
  let nudges = 0;
  let pending = false;
  const lastWasTruncated = (state: RolloutState) => state.transitions.at(-1)?.ac.stopReason === 'length';
  return {
    async onTurnBegin(state) {
      if (!(pending || lastWasTruncated(state)) || nudges >= args.max_nudges) return null;
      pending = false;
      nudges++;
      return [{ role: 'user', content: args.message }];
    },
    async onStopReason(reason, state) {
      // Only the env's own stop on the cut turn; a runner budget stop (no stop metric yet) stands.
      const envCut = reason === StopReason.MAX_TOKENS && lastWasTruncated(state) && state.transitions.at(-1)!.metrics[`${STOP_METRIC_PREFIX}${reason}`] === 1;
      if (!envCut || nudges >= args.max_nudges) return reason;
      pending = true;
      return null;
    },
  };
}

registerRolloutHook(
  'nudge_on_length',
  z.strictObject({ max_nudges: z.int().positive().default(1), message: z.string().min(1).default(DEFAULT_LENGTH_NUDGE) }),
  (args) => nudgeOnLength(args),
);
