// One rollout under RolloutLimits (reference 0.6.1 rl/rollout_runner.py, without hooks): per-turn
// token budgets, max_turns, the graceful whole-rollout timeout and the raising per-sample timeout.
// With no limits this is exactly the unconfigured loop: initial observation, then sample → step
// until the env ends the episode.
import type { ModelInput } from '../../backends/types.js';
import { modelInputFromInts, modelInputLength } from '../model-input.js';
import type { TokenCompleter } from './completers.js';
import { SamplingTurnTimeoutError, withinSeconds, type RolloutLimits } from './rollout-limits.js';
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

export const TRUNCATION_METRIC_KEY = 'num_truncations_max_turn_tokens';

const EMPTY_OB = (): ModelInput => modelInputFromInts([]);

export function stopReasonFromMetrics(metrics: Metrics): string | null {
  for (const k of Object.keys(metrics)) {
    if (k.startsWith(STOP_METRIC_PREFIX)) return k.slice(STOP_METRIC_PREFIX.length);
  }
  return null;
}

const withoutStopMetrics = (m: Metrics): Metrics => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith(STOP_METRIC_PREFIX)));

/** Run one env to completion; `limits` default to the env's own `rolloutLimits`. */
export function runRollout(policy: TokenCompleter, env: Env, limits?: RolloutLimits | null): Promise<Trajectory> {
  return new RolloutRun(policy, env, limits ?? env.rolloutLimits ?? null).run();
}

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
  ) {}

  async run(): Promise<Trajectory> {
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
    const init = await this.env.initialObservation();
    if (init instanceof InitialObservationOverflow) return this.finalizeInitialOverflow(init);
    this.ob = init.ob;
    this.stopCondition = init.stopCondition;
    for (;;) {
      const preTurn = this.preTurnStopReason() ?? this.budgetStopReason();
      if (preTurn !== null) return this.finalizeRunnerStop(preTurn);
      const ac = await this.sample(this.perCallBudget());
      if (this.abandoned) return this.finalizeRunnerStop(StopReason.ROLLOUT_TIMEOUT);
      const step = await this.env.step(ac.tokens, { extra: { stop_reason: ac.stopReason } });
      if (this.abandoned) return this.finalizeRunnerStop(StopReason.ROLLOUT_TIMEOUT);
      const transition: Transition = { ob: this.ob, ac, reward: step.reward, episodeDone: step.episodeDone, metrics: step.metrics ?? {}, logs: step.logs ?? {} };
      this.transitions.push(transition);
      this.turnIndex++;
      this.sampledTokens += ac.tokens.length;
      if (ac.stopReason === 'length' && !step.episodeDone) this.numTruncations++;
      this.ob = step.nextObservation;
      this.stopCondition = step.nextStopCondition;
      if (step.episodeDone) return this.finalize(stopReasonFromMetrics(transition.metrics));
    }
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
    // The per-call cap is passed only when a budget applies, as the reference does.
    const call = budget === undefined ? this.policy(this.ob, this.stopCondition) : this.policy(this.ob, this.stopCondition, { maxTokens: budget });
    const seconds = this.limits?.sampling_turn_timeout_seconds ?? null;
    return withinSeconds(call, seconds, () => new SamplingTurnTimeoutError(`Sampling call exceeded sampling_turn_timeout_seconds=${seconds}`));
  }

  private attachTruncationMetric(): void {
    if (this.numTruncations > 0 && this.transitions.length > 0) {
      const last = this.transitions[this.transitions.length - 1];
      last.metrics = { ...last.metrics, [TRUNCATION_METRIC_KEY]: this.numTruncations };
    }
  }

  private finalize(stopReason: string | null): Trajectory {
    this.attachTruncationMetric();
    return { transitions: this.transitions, finalOb: this.ob, stopReason };
  }

  private finalizeInitialOverflow(init: InitialObservationOverflow): Trajectory {
    const metrics = { ...init.metrics };
    this.transitions.push({ ob: EMPTY_OB(), ac: { tokens: [], maybeLogprobs: [], stopReason: 'stop' }, reward: init.reward, episodeDone: true, metrics, logs: { ...init.logs } });
    return { transitions: this.transitions, finalOb: EMPTY_OB(), stopReason: stopReasonFromMetrics(metrics) };
  }

  /** A stop the env never saw: the last transition becomes terminal with the runner's reason. */
  private finalizeRunnerStop(reason: string): Trajectory {
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
    return { transitions: [...this.transitions], finalOb: this.ob, stopReason: reason };
  }
}
