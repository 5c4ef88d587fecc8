// The tool-using agent env (reference 0.6.1 tool_use/agent_tool_message_env.py): a MessageEnv that
// takes the policy's parsed message (the model family's renderer parses the tool calls), runs the
// calls, appends the tool messages and ends the episode when the model stops calling tools, a tool
// asks to stop, the turn or tool-call budget is spent, or a parse failure ends it (one-shot or under
// a ParseErrorPolicy). `buildAgentToolEnv` wraps it in the token-level EnvFromMessageEnv.
import { PARSE_FAILURE_DETAIL_MAX_CHARS, getTextContent } from '../renderers/content.js';
import type { Content, Message, Renderer, ToolCall, UnparsedToolCall } from '../renderers/types.js';
import { EnvFromMessageEnv, type MessageEnv, type MessageStepResult } from '../rl/message-env.js';
import { GraderTimeoutError, withinSeconds, type ParseErrorPolicy, type RolloutLimits, type TerminationRewardPolicy } from '../rl/rollout-limits.js';
import { PARSE_ERROR_MASKED_METRIC_KEY, STOP_METRIC_PREFIX, StopReason, type Logs, type Metrics } from '../rl/types.js';
import { handleToolCall } from './tools.js';
import type { Tool, ToolResult } from './types.js';

export type RewardResult = [number, Metrics];
export type RewardFn = (messages: Message[]) => Promise<RewardResult>;
/** `parallel` runs a turn's calls concurrently; `sequential` in the order the model asked (shared mutable state). */
export type ToolExecution = 'parallel' | 'sequential';

/**
 * Runs one turn's tool calls. The default calls the tools; a durable runner (rollout activities)
 * answers recorded results by the call's logical position instead, so a retried rollout does not
 * act twice. `turn` counts from 1, `index` is the call's place in the turn.
 */
export type ToolCallRunner = (call: ToolCall, position: { turn: number; index: number }, run: () => Promise<ToolResult>) => Promise<ToolResult>;

export interface AgentToolMessageEnvOptions {
  tools: Tool[];
  initialMessages: Message[];
  maxTurns: number;
  rewardFn: RewardFn;
  failedParseReward?: number;
  terminateOnParseError?: boolean;
  maxToolCalls?: number | null;
  parseErrorPolicy?: ParseErrorPolicy | null;
  toolExecution?: ToolExecution;
  terminationPolicy?: TerminationRewardPolicy | null;
  /** Bound on each tool call, in seconds (an extension: the reference leaves timeouts to each tool). */
  toolTimeoutSeconds?: number | null;
  toolCallRunner?: ToolCallRunner;
}

const stopMetric = (reason: string) => `${STOP_METRIC_PREFIX}${reason}`;

function contentAsString(content: Content): string {
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' ? p.text : p.type === 'thinking' ? p.thinking : '<image>')).join('');
}

export class AgentToolMessageEnv implements MessageEnv {
  readonly tools: Tool[];
  readonly initialMessages: Message[];
  readonly maxTurns: number;
  readonly rewardFn: RewardFn;
  readonly failedParseReward: number;
  readonly terminateOnParseError: boolean;
  maxToolCalls: number | null;
  parseErrorPolicy: ParseErrorPolicy | null;
  readonly toolExecution: ToolExecution;
  readonly terminationPolicy: TerminationRewardPolicy | null;
  readonly toolTimeoutSeconds: number | null;
  history: Message[] = [];
  private turnCount = 0;
  private consecutiveParseErrors = 0;
  private toolCallsMade = 0;
  private shouldStop = false;
  private readonly toolDict: Map<string, Tool>;
  private readonly toolCallRunner: ToolCallRunner;

  constructor(opts: AgentToolMessageEnvOptions) {
    this.tools = opts.tools;
    this.initialMessages = opts.initialMessages;
    this.maxTurns = opts.maxTurns;
    this.rewardFn = opts.rewardFn;
    this.failedParseReward = opts.failedParseReward ?? -0.1;
    this.terminateOnParseError = opts.terminateOnParseError ?? true;
    this.maxToolCalls = opts.maxToolCalls ?? null;
    this.parseErrorPolicy = opts.parseErrorPolicy ?? null;
    this.toolExecution = opts.toolExecution ?? 'parallel';
    this.terminationPolicy = opts.terminationPolicy ?? null;
    this.toolTimeoutSeconds = opts.toolTimeoutSeconds ?? null;
    this.toolDict = new Map(this.tools.map((t) => [t.name, t]));
    this.toolCallRunner = opts.toolCallRunner ?? ((_call, _position, run) => run());
  }

  async initialObservation(): Promise<Message[]> {
    if (!this.history.length) this.history = [...this.initialMessages];
    return this.history;
  }

  /** The runner's tool-call limit; with one configured here already, the tighter cap wins. */
  setMaxToolCalls(maxToolCalls: number): void {
    this.maxToolCalls = this.maxToolCalls === null ? maxToolCalls : Math.min(this.maxToolCalls, maxToolCalls);
  }

  setParseErrorPolicy(policy: ParseErrorPolicy): void {
    this.parseErrorPolicy = policy;
  }

  /** A truncated turn is kept as-is; no tools run and the counters stay. */
  async observeTruncatedResponse(message: Message): Promise<Message[]> {
    this.history.push(message);
    return this.history;
  }

  async addMessages(messages: Message[]): Promise<Message[]> {
    this.history.push(...messages);
    return this.history;
  }

  /** Runs the calls (in parallel or in order) and appends their messages in request order. */
  private async handleToolCalls(toolCalls: ToolCall[]): Promise<Message[]> {
    const turn = this.turnCount;
    const one = (tc: ToolCall, index: number) =>
      this.toolCallRunner(tc, { turn, index }, () => handleToolCall(this.toolDict, tc, { timeoutSeconds: this.toolTimeoutSeconds }));
    let results: ToolResult[];
    if (this.toolExecution === 'sequential') {
      results = [];
      for (const [i, tc] of toolCalls.entries()) results.push(await one(tc, i));
    } else {
      results = await Promise.all(toolCalls.map(one));
    }
    const all: Message[] = [];
    for (const result of results) {
      for (const msg of result.messages) {
        this.history.push(msg);
        all.push(msg);
      }
      if (result.shouldStop) this.shouldStop = true;
    }
    return all;
  }

  async step(message: Message): Promise<MessageStepResult> {
    this.turnCount += 1;
    const metrics: Metrics = {};
    const logs: Logs = {};
    this.history.push(message);
    const assistantText = getTextContent(message);
    if (assistantText) logs.assistant_content = assistantText;

    const toolCalls: ToolCall[] = [...(message.tool_calls ?? [])];
    const unparsed: UnparsedToolCall[] = [...(message.unparsed_tool_calls ?? [])];
    const maxTurnsReached = this.turnCount >= this.maxTurns;

    if (unparsed.length) {
      metrics.parse_error = 1.0;
      logs.parse_errors = unparsed.map((u) => u.error).join('\n');
    }

    if (unparsed.length && !toolCalls.length) {
      // Every call the model tried was malformed: a content-level parse failure.
      this.consecutiveParseErrors += 1;
      if (this.parseErrorPolicy) return this.contentParseErrorStep(this.parseErrorPolicy, unparsed, metrics, logs, maxTurnsReached);
      const done = this.terminateOnParseError || maxTurnsReached;
      if (maxTurnsReached) metrics.max_turns = 1.0;
      if (done) metrics[stopMetric(StopReason.PARSE_ERROR)] = 1.0;
      return { reward: this.failedParseReward, episodeDone: done, nextMessages: this.history, metrics, logs };
    }

    this.consecutiveParseErrors = 0;

    // The tool-call budget: checked before dispatch and within the batch (only the allowed prefix runs).
    let capped = false;
    let toRun = toolCalls;
    if (toolCalls.length && this.maxToolCalls !== null) {
      const remaining = Math.max(this.maxToolCalls - this.toolCallsMade, 0);
      if (toolCalls.length > remaining) {
        capped = true;
        toRun = toolCalls.slice(0, remaining);
        logs.tool_calls_dropped = `${toolCalls.length - remaining} tool call(s) dropped: max_tool_calls=${this.maxToolCalls} reached`;
      }
    }

    if (toRun.length) {
      toRun.forEach((tc, i) => {
        logs[`tool_call_${i}`] = `${tc.function.name}(${tc.function.arguments})`;
      });
      const resultMessages = await this.handleToolCalls(toRun);
      this.toolCallsMade += toRun.length;
      resultMessages.forEach((m, i) => {
        logs[`tool_result_${i}`] = contentAsString(m.content);
      });
    }

    const noToolCalls = toolCalls.length === 0;
    const done = noToolCalls || maxTurnsReached || this.shouldStop || capped;
    if (maxTurnsReached && !noToolCalls) metrics.max_turns = 1.0;
    if (this.shouldStop) metrics.tool_stopped = 1.0;
    if (capped) metrics.max_tool_calls = 1.0;
    if (done) {
      const reason = noToolCalls
        ? StopReason.COMPLETED
        : this.shouldStop
          ? StopReason.TOOL_STOPPED
          : capped
            ? StopReason.MAX_TOOL_CALLS
            : StopReason.MAX_TURNS;
      metrics[stopMetric(reason)] = 1.0;
    }

    let reward = 0.0;
    if (done) {
      const [r, rewardMetrics] = await this.grade();
      reward = r;
      Object.assign(metrics, rewardMetrics);
    }
    return { reward, episodeDone: done, nextMessages: this.history, metrics, logs };
  }

  /** reward_fn under the termination policy: the completion suffix only, bounded by its timeout. */
  private async grade(): Promise<RewardResult> {
    const policy = this.terminationPolicy;
    const messages = policy && !policy.pass_all_messages_to_grader ? this.history.slice(this.initialMessages.length) : this.history;
    const timeout = policy?.grader_timeout_seconds ?? null;
    return withinSeconds(this.rewardFn(messages), timeout, () => new GraderTimeoutError(`reward_fn ran past grader_timeout_seconds=${timeout}`));
  }

  /** Under a ParseErrorPolicy: inject the corrective message while the budget lasts, else stop. */
  private contentParseErrorStep(policy: ParseErrorPolicy, unparsed: UnparsedToolCall[], metrics: Metrics, logs: Logs, maxTurnsReached: boolean): MessageStepResult {
    logs.parse_failure_kind = 'content';
    if (policy.mask_error_turns) metrics[PARSE_ERROR_MASKED_METRIC_KEY] = 1.0;
    if (this.consecutiveParseErrors <= policy.max_consecutive && !maxTurnsReached) {
      const details = unparsed.map((u) => u.error).join('\n').slice(0, PARSE_FAILURE_DETAIL_MAX_CHARS);
      this.history.push({ role: 'user', content: policy.retry_message_template.replaceAll('{details}', details) });
      logs.parse_error_retry = `injected corrective message (consecutive parse error ${this.consecutiveParseErrors}, budget ${policy.max_consecutive})`;
      return { reward: -policy.penalty_per_error, episodeDone: false, nextMessages: this.history, metrics, logs };
    }
    if (maxTurnsReached) metrics.max_turns = 1.0;
    metrics[stopMetric(StopReason.PARSE_ERROR)] = 1.0;
    return { reward: policy.terminal_reward, episodeDone: true, nextMessages: this.history, metrics, logs };
  }
}

export interface BuildAgentToolEnvOptions {
  maxTurns?: number | null;
  failedParseReward?: number;
  terminateOnParseError?: boolean;
  maxToolCalls?: number | null;
  maxTrajectoryTokens?: number | null;
  maxGenerationTokens?: number | null;
  contextOverflowReward?: number;
  terminateOnLength?: boolean | null;
  parseErrorPolicy?: ParseErrorPolicy | null;
  /** The reference's rollout_config pieces the env reads: limits, tool execution, termination. */
  limits?: RolloutLimits | null;
  toolExecution?: ToolExecution;
  terminationPolicy?: TerminationRewardPolicy | null;
  toolTimeoutSeconds?: number | null;
  toolCallRunner?: ToolCallRunner;
}

/**
 * The reference's build_agent_tool_env: an AgentToolMessageEnv inside EnvFromMessageEnv. Explicit
 * options win over `limits`; the tighter of two tool-call caps wins; with a cumulative token
 * budget in `limits` the runner owns length stops, so the env continues past a truncated turn.
 */
export function buildAgentToolEnv(renderer: Renderer, tools: Tool[], initialMessages: Message[], rewardFn: RewardFn, opts: BuildAgentToolEnvOptions = {}): EnvFromMessageEnv {
  const limits = opts.limits ?? null;
  const maxTurns = opts.maxTurns ?? limits?.max_turns ?? 5;
  let maxToolCalls = opts.maxToolCalls ?? null;
  if (limits?.max_tool_calls != null) maxToolCalls = maxToolCalls === null ? limits.max_tool_calls : Math.min(maxToolCalls, limits.max_tool_calls);
  const runnerOwnsLength = !!limits && (limits.max_trajectory_tokens !== null || limits.max_sampled_tokens !== null || limits.max_turn_tokens !== null);
  const terminateOnLength = opts.terminateOnLength ?? !runnerOwnsLength;
  const failedParseReward = opts.failedParseReward ?? -0.1;
  const terminateOnParseError = opts.terminateOnParseError ?? true;
  const messageEnv = new AgentToolMessageEnv({
    tools,
    initialMessages,
    maxTurns,
    rewardFn,
    failedParseReward,
    terminateOnParseError,
    maxToolCalls,
    parseErrorPolicy: opts.parseErrorPolicy ?? null,
    toolExecution: opts.toolExecution ?? 'parallel',
    terminationPolicy: opts.terminationPolicy ?? null,
    toolTimeoutSeconds: opts.toolTimeoutSeconds ?? null,
    toolCallRunner: opts.toolCallRunner,
  });
  const env = new EnvFromMessageEnv(renderer, messageEnv, {
    failedParseReward,
    terminateOnParseError,
    maxTrajectoryTokens: opts.maxTrajectoryTokens ?? null,
    maxGenerationTokens: opts.maxGenerationTokens ?? null,
    contextOverflowReward: opts.contextOverflowReward ?? -0.1,
    terminateOnLength,
    rolloutLimits: limits,
  });
  if (opts.parseErrorPolicy) env.setParseErrorPolicy(opts.parseErrorPolicy);
  return env;
}
