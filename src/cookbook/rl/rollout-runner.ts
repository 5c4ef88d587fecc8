// One rollout under RolloutLimits, RolloutHooks and a ParseErrorPolicy (reference 0.6.1
// rl/rollout_runner.py): per-turn token budgets, max_turns, the graceful whole-rollout timeout, the
// raising per-sample timeout; max_tool_calls and the parse-error policy are pushed into the env at
// rollout start through its seams (tool dispatch and parsing are the env's); hooks inject messages
// before a turn and accept, override or clear stops. With none of these this is exactly the
// unconfigured loop: initial observation, then sample → step until the env ends the episode.
import type { ModelInput } from '../../backends/types.js';
import { modelInputFromInts, modelInputLength } from '../model-input.js';
import type { TokenCompleter } from './completers.js';
import type { Message } from '../renderers/types.js';
import type { RolloutHooks, RolloutState } from './rollout-hooks.js';
import { SamplingTurnTimeoutError, withinSeconds, type ParseErrorPolicy, type RolloutLimits } from './rollout-limits.js';
import {
  InitialObservationOverflow,
  STOP_METRIC_PREFIX,
  StopReason,
  type Env,
  type Metrics,
  type StopCondition,
  type Trajectory,
  type Transition,
} from './types.js';
import { scopeSpan } from '../timing.js';

export const TRUNCATION_METRIC_KEY = 'num_truncations_max_turn_tokens';

const EMPTY_OB = (): ModelInput => modelInputFromInts([]);

export function stopReasonFromMetrics(metrics: Metrics): string | null {
  for (const k of Object.keys(metrics)) {
    if (k.startsWith(STOP_METRIC_PREFIX)) return k.slice(STOP_METRIC_PREFIX.length);
  }
  return null;
}

const withoutStopMetrics = (m: Metrics): Metrics => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith(STOP_METRIC_PREFIX)));

export interface RolloutExtras {
  hooks?: RolloutHooks | null;
  parseErrors?: ParseErrorPolicy | null;
}

/** Run one env to completion; limits, hooks and parse-error policy default to the env's own. */
export function runRollout(policy: TokenCompleter, env: Env, limits?: RolloutLimits | null, extras: RolloutExtras = {}): Promise<Trajectory> {
  const hooks = extras.hooks ?? env.rolloutHooks ?? null;
  const parseErrors = extras.parseErrors ?? env.parseErrorPolicy ?? null;
  return new RolloutRun(policy, env, limits ?? env.rolloutLimits ?? null, hooks, parseErrors).run();
}

/** A rollout that tried to inject into an env without the injection seam. */
export class InjectionUnsupportedError extends TypeError {}

class RolloutRun {
  private readonly transitions: Transition[] = [];
  private turnIndex = 0;
  private sampledTokens = 0;
  private numTruncations = 0;
  private ob: ModelInput = EMPTY_OB();
  private stopCondition: StopCondition = [];
  private readonly startedAt = performance.now();
  /** Set when the outer timeout fired: the loop still in flight must not touch the result. */
  private abandoned = false;

  constructor(
    private readonly policy: TokenCompleter,
    private readonly env: Env,
    private readonly limits: RolloutLimits | null,
    private readonly hooks: RolloutHooks | null,
    private readonly parseErrors: ParseErrorPolicy | null,
  ) {}

  async run(): Promise<Trajectory> {
    this.pushToolCallLimit();
    this.pushParseErrorPolicy();
    const timeout = this.limits?.rollout_timeout_seconds ?? null;
    if (timeout === null) return this.loop();
    const timedOut = Symbol('timeout');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<typeof timedOut>((resolve) => {
      timer = setTimeout(() => resolve(timedOut), timeout * 1000);
    });
    const looping = this.loop();
    try {
      const first = await Promise.race([looping, deadline]);
      if (first !== timedOut) return first;
      this.abandoned = true;
      looping.catch(() => undefined); // its late result or error is discarded
      return this.finalizeRunnerStop(StopReason.ROLLOUT_TIMEOUT);
    } finally {
      clearTimeout(timer);
    }
  }

  private async loop(): Promise<Trajectory> {
    // Spans under the reference's names (rollout_runner.py's scope_spans), where an activity records them.
    const init = await scopeSpan('env_initial_observation', () => this.env.initialObservation());
    if (init instanceof InitialObservationOverflow) return this.finalizeInitialOverflow(init);
    this.ob = init.ob;
    this.stopCondition = init.stopCondition;
    for (;;) {
      const preTurn = await this.resolveStop(this.preTurnStopReason());
      if (preTurn !== null) return this.finalizeRunnerStop(preTurn);
      // Injection comes before the budget math, so injected tokens count toward the trajectory budget.
      const injected = this.hooks?.onTurnBegin ? await this.hooks.onTurnBegin(this.state()) : null;
      if (injected?.length) await this.inject(injected);
      // A cleared budget stop samples this turn without the exhausted term; it re-fires next turn.
      const budgetStop = await this.resolveStop(this.budgetStopReason());
      if (budgetStop !== null) return this.finalizeRunnerStop(budgetStop);
      const ac = await this.sample(this.perCallBudget());
      if (this.abandoned) return this.finalizeRunnerStop(StopReason.ROLLOUT_TIMEOUT, false);
      const step = await scopeSpan('env_step', () => this.env.step(ac.tokens, { extra: { stop_reason: ac.stopReason } }));
      if (this.abandoned) return this.finalizeRunnerStop(StopReason.ROLLOUT_TIMEOUT, false);
      const transition: Transition = { ob: this.ob, ac, reward: step.reward, episodeDone: step.episodeDone, metrics: step.metrics ?? {}, logs: step.logs ?? {} };
      this.transitions.push(transition);
      this.turnIndex++;
      this.sampledTokens += ac.tokens.length;
      if (ac.stopReason === 'length' && !step.episodeDone) this.numTruncations++;
      this.ob = step.nextObservation;
      this.stopCondition = step.nextStopCondition;
      if (!step.episodeDone) continue;
      let envReason = stopReasonFromMetrics(transition.metrics);
      if (this.hooks?.onStopReason && envReason !== null) {
        const resolved = await this.hooks.onStopReason(envReason, this.state());
        if (resolved === null) {
          // Cleared: the recorded turn is no longer terminal; roll on from the env's next observation.
          transition.episodeDone = false;
          transition.metrics = withoutStopMetrics(transition.metrics);
          continue;
        }
        if (resolved !== envReason) {
          transition.metrics = { ...withoutStopMetrics(transition.metrics), [`${STOP_METRIC_PREFIX}${resolved}`]: 1.0 };
          envReason = resolved;
        }
      }
      return this.finalize(envReason);
    }
  }

  private state(): RolloutState {
    return {
      turnIndex: this.turnIndex,
      observationTokens: modelInputLength(this.ob),
      sampledTokens: this.sampledTokens,
      numLengthTruncations: this.numTruncations,
      elapsedSeconds: this.elapsedSeconds(),
      transitions: this.transitions,
    };
  }

  /** A runner-imposed stop passed through on_stop_reason; null = none, or cleared by the hook. */
  private async resolveStop(reason: string | null): Promise<string | null> {
    if (reason === null || !this.hooks?.onStopReason) return reason;
    return this.hooks.onStopReason(reason, this.state());
  }

  private async inject(messages: Message[]): Promise<void> {
    if (!this.env.injectMessages) {
      throw new InjectionUnsupportedError(
        `on_turn_begin returned messages to inject, but the environment (${this.env.constructor.name}) does not support message injection (no injectMessages method)`,
      );
    }
    const next = await this.env.injectMessages(messages);
    this.ob = next.ob;
    this.stopCondition = next.stopCondition;
  }

  private pushToolCallLimit(): void {
    const max = this.limits?.max_tool_calls ?? null;
    if (max === null) return;
    if (!this.env.setMaxToolCalls) {
      console.warn(
        `[cookbook] RolloutLimits.max_tool_calls=${max} is configured, but the environment (${this.env.constructor.name}) does not support a tool-call limit (no setMaxToolCalls method); the limit will not be enforced.`,
      );
      return;
    }
    this.env.setMaxToolCalls(max);
  }

  private pushParseErrorPolicy(): void {
    if (this.parseErrors === null) return;
    if (!this.env.setParseErrorPolicy) {
      console.warn(
        `[cookbook] A ParseErrorPolicy is configured, but the environment (${this.env.constructor.name}) does not support one (no setParseErrorPolicy method); the default one-shot parse-failure semantics (failed_parse_reward / terminate_on_parse_error) will apply.`,
      );
      return;
    }
    this.env.setParseErrorPolicy(this.parseErrors);
  }

  private elapsedSeconds(): number {
    return (performance.now() - this.startedAt) / 1000;
  }

  private preTurnStopReason(): string | null {
    const lim = this.limits;
    if (!lim) return null;
    if (lim.rollout_timeout_seconds !== null && this.elapsedSeconds() >= lim.rollout_timeout_seconds) return StopReason.ROLLOUT_TIMEOUT;
    if (lim.max_turns !== null && this.turnIndex >= lim.max_turns) return StopReason.MAX_TURNS;
    return null;
  }

  /** A remainder ≤ 1 is exhausted (a 1-token turn is useless); the trajectory budget wins. */
  private budgetStopReason(): string | null {
    const lim = this.limits;
    if (!lim) return null;
    if (lim.max_trajectory_tokens !== null && lim.max_trajectory_tokens - modelInputLength(this.ob) <= 1) return StopReason.MAX_TOKENS;
    if (lim.max_sampled_tokens !== null && lim.max_sampled_tokens - this.sampledTokens <= 1) return StopReason.MAX_SAMPLED_TOKENS;
    return null;
  }

  private perCallBudget(): number | undefined {
    const lim = this.limits;
    if (!lim) return undefined;
    const terms: number[] = [];
    if (lim.max_turn_tokens !== null) terms.push(lim.max_turn_tokens);
    if (lim.max_trajectory_tokens !== null) {
      const left = lim.max_trajectory_tokens - modelInputLength(this.ob);
      if (left > 1) terms.push(left);
    }
    if (lim.max_sampled_tokens !== null) {
      const left = lim.max_sampled_tokens - this.sampledTokens;
      if (left > 1) terms.push(left);
    }
    return terms.length ? Math.min(...terms) : undefined;
  }

  private sample(budget: number | undefined) {
    return scopeSpan('policy_sample', () => {
      // The per-call cap is passed only when a budget applies, as the reference does.
      const call = budget === undefined ? this.policy(this.ob, this.stopCondition) : this.policy(this.ob, this.stopCondition, { maxTokens: budget });
      const seconds = this.limits?.sampling_turn_timeout_seconds ?? null;
      return withinSeconds(call, seconds, () => new SamplingTurnTimeoutError(`Sampling call exceeded sampling_turn_timeout_seconds=${seconds}`));
    });
  }

  private attachTruncationMetric(): void {
    if (this.numTruncations > 0 && this.transitions.length > 0) {
      const last = this.transitions[this.transitions.length - 1];
      last.metrics = { ...last.metrics, [TRUNCATION_METRIC_KEY]: this.numTruncations };
    }
  }

  private async runEndHooks(graded: boolean): Promise<void> {
    if (!this.hooks) return;
    const state = this.state();
    if (graded) await this.hooks.onGrade?.(state);
    await this.hooks.onArtifacts?.(state);
  }

  private async finalize(stopReason: string | null): Promise<Trajectory> {
    this.attachTruncationMetric();
    await this.runEndHooks(true);
    return { transitions: this.transitions, finalOb: this.ob, stopReason };
  }

  private async finalizeInitialOverflow(init: InitialObservationOverflow): Promise<Trajectory> {
    const metrics = { ...init.metrics };
    this.transitions.push({ ob: EMPTY_OB(), ac: { tokens: [], maybeLogprobs: [], stopReason: 'stop' }, reward: init.reward, episodeDone: true, metrics, logs: { ...init.logs } });
    await this.runEndHooks(false);
    return { transitions: this.transitions, finalOb: EMPTY_OB(), stopReason: stopReasonFromMetrics(metrics) };
  }

  /** A stop the env never saw: the last transition becomes terminal with the runner's reason. */
  private async finalizeRunnerStop(reason: string, runHooks = true): Promise<Trajectory> {
    const n = this.transitions.length;
    if (n > 0) {
      const last = this.transitions[n - 1];
      this.transitions[n - 1] = { ...last, episodeDone: true, metrics: { ...withoutStopMetrics(last.metrics), [`${STOP_METRIC_PREFIX}${reason}`]: 1.0 } };
    } else {
      this.transitions.push({
        ob: EMPTY_OB(),
        ac: { tokens: [], maybeLogprobs: [], stopReason: 'stop' },
        reward: 0,
        episodeDone: true,
        metrics: { [`${STOP_METRIC_PREFIX}${reason}`]: 1.0 },
        logs: {},
      });
    }
    this.attachTruncationMetric();
    // An abandoned loop's late result is discarded: its end hooks already ran on the timeout path.
    if (runHooks) await this.runEndHooks(false);
    return { transitions: [...this.transitions], finalOb: this.ob, stopReason: reason };
  }
}
