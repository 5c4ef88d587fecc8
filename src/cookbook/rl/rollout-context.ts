// Samplers an env needs besides the policy — an answerer, an opponent, a grader, a reward model —
// bound to one group rollout. Every call is seeded from the rollout's logical position plus
// (episode, role) and its call index (so per turn), which makes a recomputed rollout sample exactly
// what the first one did.
import type { SamplingSession } from '../../backends/types.js';
import { rendererForModel, type ModelChoice } from '../renderers/for-model.js';
import type { Renderer } from '../renderers/types.js';
import { tinkerMessageCompleter, type MessageCompleter } from './completers.js';
import { resolveRolloutHooks, type RolloutHooksConfig } from './rollout-hooks.js';
import type { ParseErrorPolicy, RolloutLimits } from './rollout-limits.js';
import { actAlways, type Once } from './side-effects.js';
import type { EnvGroupBuilder, StopCondition } from './types.js';

export interface SideSamplerSpec {
  /** A base model name; null = the policy's own base weights. */
  model: string | null;
  /** The side model's renderer; null = the model's recommended one (the policy's renderer for null). */
  rendererName?: string | null;
  maxTokens: number;
  temperature?: number;
  stopCondition?: StopCondition | null;
}

export interface RolloutContext {
  /** The completer of `role` in `episode` (the env's index among those its builder made). */
  messageCompleter(spec: SideSamplerSpec, episode: number, role: number): MessageCompleter;
  /** A raw session on `model`: a sampler weights path (`tinker://…`) or a base model name. */
  samplingSession(model: string): Promise<SamplingSession>;
  /** Seeds of one sampler of this rollout, one per call, apart from every other `parts`. */
  seeds(...parts: number[]): () => number;
  /** Side effects (tool calls, sandbox runs) recorded once at this rollout's position and replayed on a retry. */
  once: Once;
}

/** A builder whose envs need side samplers: bound to the context of one group rollout. */
export interface ContextualEnvGroupBuilder extends EnvGroupBuilder {
  withContext(ctx: RolloutContext): EnvGroupBuilder;
}

export function needsContext(b: EnvGroupBuilder): b is ContextualEnvGroupBuilder {
  return typeof (b as Partial<ContextualEnvGroupBuilder>).withContext === 'function';
}

export interface SamplerContextOptions {
  /** Opens a sampling session on sampler weights (`{modelPath}`) or a base model (`{baseModel}`). */
  openSession(source: { modelPath: string } | { baseModel: string }): Promise<SamplingSession>;
  /** The policy's model choice (name, renderer, tokenizer) for `model: null`. */
  policyModel: ModelChoice;
  /** Seeds of (episode, role, …), one per call: sequentialSeeds(run seed, position…, ...parts). */
  seeds(...parts: number[]): () => number;
  /** The record of this rollout's side effects; absent: they act every time. */
  once?: Once;
}

/** A context whose samplers are sessions opened once per model (base model or weights path). */
export function samplerRolloutContext(opts: SamplerContextOptions): RolloutContext {
  const sessions = new Map<string, Promise<SamplingSession>>();
  const renderers = new Map<string, Promise<Renderer>>();
  const sessionFor = (model: string) => {
    if (!sessions.has(model)) sessions.set(model, opts.openSession(model.startsWith('tinker://') ? { modelPath: model } : { baseModel: model }));
    return sessions.get(model)!;
  };
  const rendererFor = (model: string | null, rendererName: string | null) => {
    const key = `${model ?? ''}\u0000${rendererName ?? ''}`;
    if (!renderers.has(key)) {
      const choice: ModelChoice = model === null ? { ...opts.policyModel, renderer_name: rendererName ?? opts.policyModel.renderer_name } : { model_name: model, renderer_name: rendererName };
      renderers.set(key, rendererForModel(choice).then((r) => r.renderer));
    }
    return renderers.get(key)!;
  };
  return {
    samplingSession: sessionFor,
    seeds: opts.seeds,
    once: opts.once ?? actAlways,
    messageCompleter(spec, episode, role) {
      const seedFor = opts.seeds(episode, role);
      const model = spec.model ?? opts.policyModel.model_name;
      let completer: Promise<MessageCompleter> | undefined;
      return async (messages) => {
        completer ??= Promise.all([sessionFor(model), rendererFor(spec.model, spec.rendererName ?? null)]).then(([session, renderer]) =>
          tinkerMessageCompleter(session, renderer, { maxTokens: spec.maxTokens, temperature: spec.temperature, stopCondition: spec.stopCondition, seedFor }),
        );
        return (await completer)(messages);
      };
    },
  };
}

/** The seeds role of an episode's rollout hooks, apart from every env's side samplers. */
export const ROLLOUT_HOOKS_ROLE = 1000;

export interface RolloutSetup {
  parseErrors?: ParseErrorPolicy | null;
  hooks?: RolloutHooksConfig | null;
}

/**
 * The builder one group rollout runs: bound to its context when its envs need side samplers, and
 * giving every env without its own the run's `rollout_limits`, `parse_errors` and `rollout_hooks`
 * (one hooks object per episode, seeded from the episode's position).
 */
export function bindRollout(builder: EnvGroupBuilder, ctx: RolloutContext, limits: RolloutLimits | null, setup: RolloutSetup = {}): EnvGroupBuilder {
  const bound = needsContext(builder) ? builder.withContext(ctx) : builder;
  const parseErrors = setup.parseErrors ?? null;
  const makeHooks = setup.hooks ? resolveRolloutHooks(setup.hooks) : null;
  if (limits === null && parseErrors === null && makeHooks === null) return bound;
  return {
    makeEnvs: async () => {
      const envs = await bound.makeEnvs();
      envs.forEach((env, episode) => {
        if (limits !== null) env.rolloutLimits ??= limits;
        if (parseErrors !== null) env.parseErrorPolicy ??= parseErrors;
        if (makeHooks !== null) env.rolloutHooks ??= makeHooks({ seedFor: ctx.seeds(episode, ROLLOUT_HOOKS_ROLE) });
      });
      return envs;
    },
    computeGroupRewards: (t, e) => bound.computeGroupRewards(t, e),
    cleanup: () => bound.cleanup(),
    loggingTags: () => bound.loggingTags(),
  };
}
