// Message-level environments (reference 0.6.1 rl/message_env.py): an env that observes and answers
// with messages, and the adapter that makes it a token-level Env — it renders the conversation
// through the renderer, parses the sampled tokens back into a message, and ends the episode on a
// truncated turn, a broken parse or a context overflow with the reference's flat rewards. Its seams
// take the runner's ParseErrorPolicy, max_tool_calls and hook-injected messages and forward them to
// the inner env where that env supports them.
import { modelInputFromInts, modelInputLength } from '../model-input.js';
import type { Message, Renderer } from '../renderers/types.js';
import type { ParseErrorPolicy, RolloutLimits } from './rollout-limits.js';
import {
  InitialObservationOverflow,
  PARSE_ERROR_MASKED_METRIC_KEY,
  STOP_METRIC_PREFIX,
  StopReason,
  type Action,
  type ActionExtra,
  type Env,
  type InitialObservation,
  type Logs,
  type Metrics,
  type StepResult,
  type StopCondition,
} from './types.js';

export interface MessageStepResult {
  reward: number;
  episodeDone: boolean;
  nextMessages: Message[];
  metrics?: Metrics;
  logs?: Logs;
  nextStopCondition?: StopCondition | null;
}

export interface MessageEnv {
  /** The initial conversation history. */
  initialObservation(): Promise<Message[]>;
  /** Take the assistant's message; answer with the reward and the whole conversation so far. */
  step(message: Message): Promise<MessageStepResult>;
  /**
   * Record a truncated assistant turn without a full step (only asked when the adapter continues
   * past truncation); null = unsupported, and the adapter ends the episode as on any length stop.
   */
  observeTruncatedResponse?(message: Message): Promise<Message[] | null>;
  /** Append externally supplied messages (hook injection); answers the whole conversation. */
  addMessages?(messages: Message[]): Promise<Message[]>;
  /** Enforce a tool-call budget (pre-dispatch and mid-batch) and stop with `max_tool_calls`. */
  setMaxToolCalls?(maxToolCalls: number): void;
  /** Handle content parse failures (unparsable tool calls) under the policy. */
  setParseErrorPolicy?(policy: ParseErrorPolicy): void;
}

export interface EnvFromMessageEnvOptions {
  failedParseReward?: number;
  terminateOnParseError?: boolean;
  maxTrajectoryTokens?: number | null;
  maxGenerationTokens?: number | null;
  contextOverflowReward?: number;
  terminateOnLength?: boolean;
  rolloutLimits?: RolloutLimits | null;
}

const EMPTY = () => modelInputFromInts([]);
const stopMetric = (reason: string) => `${STOP_METRIC_PREFIX}${reason}`;

export class EnvFromMessageEnv implements Env {
  readonly failedParseReward: number;
  readonly terminateOnParseError: boolean;
  readonly maxTrajectoryTokens: number | null;
  readonly maxGenerationTokens: number | null;
  readonly contextOverflowReward: number;
  readonly terminateOnLength: boolean;
  rolloutLimits: RolloutLimits | null;
  /** Set through the runner's seam; null = the one-shot failedParseReward/terminateOnParseError. */
  parseErrorPolicy: ParseErrorPolicy | null = null;
  private readonly baseStop: StopCondition;

  constructor(
    readonly renderer: Renderer,
    readonly messageEnv: MessageEnv,
    opts: EnvFromMessageEnvOptions = {},
  ) {
    this.failedParseReward = opts.failedParseReward ?? -1.0;
    this.terminateOnParseError = opts.terminateOnParseError ?? true;
    this.maxTrajectoryTokens = opts.maxTrajectoryTokens ?? null;
    this.maxGenerationTokens = opts.maxGenerationTokens ?? null;
    this.contextOverflowReward = opts.contextOverflowReward ?? -0.1;
    this.terminateOnLength = opts.terminateOnLength ?? true;
    this.rolloutLimits = opts.rolloutLimits ?? null;
    this.baseStop = renderer.getStopSequences();
  }

  private exceedsContextLimit(observationLength: number): boolean {
    if (this.maxTrajectoryTokens === null) return false;
    return observationLength + (this.maxGenerationTokens ?? 0) > this.maxTrajectoryTokens;
  }

  private ended(reward: number, metrics: Metrics, logs: Logs = {}): StepResult {
    return { reward, episodeDone: true, nextObservation: EMPTY(), nextStopCondition: this.baseStop, metrics, logs };
  }

  async initialObservation(): Promise<InitialObservation | InitialObservationOverflow> {
    const ob = this.renderer.buildGenerationPrompt(await this.messageEnv.initialObservation());
    const length = modelInputLength(ob);
    if (this.exceedsContextLimit(length)) {
      const reserve = this.maxGenerationTokens ?? 0;
      return new InitialObservationOverflow(
        this.contextOverflowReward,
        { max_tokens_reached: 1.0, [stopMetric(StopReason.MAX_TOKENS)]: 1.0 },
        {
          initial_observation_overflow:
            `Initial observation (${length} tokens) + max_generation_tokens (${reserve}) = ${length + reserve} exceeds ` +
            `max_trajectory_tokens (${this.maxTrajectoryTokens}). This task's prompt is too long for the model's context window.`,
        },
      );
    }
    return { ob, stopCondition: this.baseStop };
  }

  async step(action: Action, opts?: { extra?: ActionExtra }): Promise<StepResult> {
    if ((opts?.extra?.stop_reason ?? 'stop') === 'length') {
      if (!this.terminateOnLength) {
        const continued = await this.continueAfterTruncation(action);
        if (continued) return continued;
      }
      return this.ended(this.contextOverflowReward, { max_tokens_reached: 1.0, [stopMetric(StopReason.MAX_TOKENS)]: 1.0 });
    }
    const parsed = this.renderer.parseResponse(action);
    if (!parsed.ok) {
      if (this.parseErrorPolicy) return this.structuralParseError(this.parseErrorPolicy, parsed.termination);
      const metrics: Metrics = { parse_error: 1.0 };
      if (this.terminateOnParseError) metrics[stopMetric(StopReason.PARSE_ERROR)] = 1.0;
      return { ...this.ended(this.failedParseReward, metrics), episodeDone: this.terminateOnParseError };
    }
    const result = await this.messageEnv.step(parsed.message);
    const nextObservation = this.renderer.buildGenerationPrompt(result.nextMessages);
    // Only a continuing episode needs room for another turn; a finished one keeps its real reward.
    if (!result.episodeDone && this.exceedsContextLimit(modelInputLength(nextObservation))) {
      return this.ended(this.contextOverflowReward, { ...result.metrics, context_overflow: 1.0, [stopMetric(StopReason.CONTEXT_OVERFLOW)]: 1.0 }, result.logs);
    }
    return {
      reward: result.reward,
      episodeDone: result.episodeDone,
      nextObservation,
      nextStopCondition: result.nextStopCondition ?? this.baseStop,
      metrics: result.metrics ?? {},
      logs: result.logs ?? {},
    };
  }

  /** A broken frame is never retried (the message boundary is unknown): the policy's terminal stop. */
  private structuralParseError(policy: ParseErrorPolicy, termination: string): StepResult {
    const metrics: Metrics = { parse_error: 1.0, [stopMetric(StopReason.PARSE_ERROR)]: 1.0 };
    if (policy.mask_error_turns) metrics[PARSE_ERROR_MASKED_METRIC_KEY] = 1.0;
    return this.ended(policy.terminal_reward, metrics, {
      parse_failure_kind: 'structural',
      parse_failure_detail:
        `response did not terminate cleanly (termination=${termination}): expected the renderer's stop signal or EOS, so the message framing is broken`,
    });
  }

  /** Seam for ParseErrorPolicy: structural failures are handled here, content ones by the inner env. */
  setParseErrorPolicy(policy: ParseErrorPolicy): void {
    this.parseErrorPolicy = policy;
    if (this.messageEnv.setParseErrorPolicy) this.messageEnv.setParseErrorPolicy(policy);
    else if (policy.max_consecutive > 0) {
      console.warn(
        `[cookbook] ParseErrorPolicy.max_consecutive=${policy.max_consecutive} is configured, but ${this.messageEnv.constructor.name} does not support a parse-error policy; content parse failures will not be retried (structural handling still applies).`,
      );
    }
  }

  /** Seam for limits.max_tool_calls: tools run inside the message env, so it enforces the budget. */
  setMaxToolCalls(maxToolCalls: number): void {
    if (!this.messageEnv.setMaxToolCalls) {
      console.warn(
        `[cookbook] max_tool_calls=${maxToolCalls} is configured, but ${this.messageEnv.constructor.name} does not support a tool-call limit; the limit will not be enforced.`,
      );
      return;
    }
    this.messageEnv.setMaxToolCalls(maxToolCalls);
  }

  /** Seam for on_turn_begin: the injected messages are re-rendered, so they count toward budgets. */
  async injectMessages(messages: Message[]): Promise<InitialObservation> {
    if (!this.messageEnv.addMessages) {
      throw new TypeError(`${this.messageEnv.constructor.name} does not support message injection (no addMessages method)`);
    }
    return { ob: this.renderer.buildGenerationPrompt(await this.messageEnv.addMessages(messages)), stopCondition: this.baseStop };
  }

  /** Keep a truncated turn (parsed leniently) and go on; null when the inner env cannot record it. */
  private async continueAfterTruncation(action: Action): Promise<StepResult | null> {
    const messages = await this.messageEnv.observeTruncatedResponse?.(this.renderer.parseResponse(action).message);
    if (!messages) return null;
    const nextObservation = this.renderer.buildGenerationPrompt(messages);
    if (this.exceedsContextLimit(modelInputLength(nextObservation))) {
      return this.ended(this.contextOverflowReward, { context_overflow: 1.0, [stopMetric(StopReason.CONTEXT_OVERFLOW)]: 1.0 });
    }
    return {
      reward: 0.0,
      episodeDone: false,
      nextObservation,
      nextStopCondition: this.baseStop,
      metrics: {},
      logs: { truncated_turn: "sampling stopped on 'length'; turn kept, episode continues" },
    };
  }
}

/**
 * Adds `logs(reward)` to the logs of the step that ends an episode (an example id, a test verdict),
 * where results files and the report's rollout browser read them.
 */
export function withEpisodeEndLogs(env: EnvFromMessageEnv, logs: (reward: number) => Record<string, string>): EnvFromMessageEnv {
  const step = env.step.bind(env);
  env.step = async (action, opts) => {
    const result = await step(action, opts);
    if (result.episodeDone) result.logs = { ...result.logs, ...logs(result.reward) };
    return result;
  };
  return env;
}
