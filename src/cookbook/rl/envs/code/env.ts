// code_rl (reference 0.6.1 recipes/code_rl): DeepCoder-style competitive programming. Each episode
// is a tool-using agent env with one tool, `check_solution`, that runs code against the problem's
// tests in the sandbox; the answer's last fenced code block is graded the same way, and the reward
// is format_coef · (has_code_block − 1) + correct. Every sandbox run is a side effect recorded at
// its logical position (the tool call's, or the episode's grading), so a rollout retried after a
// crash replays the verdicts instead of running the code again.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { ConfigurationError } from '../../../errors.js';
import { pyJsonDumps } from '../../../pyjson.js';
import { getTextContent } from '../../../renderers/content.js';
import type { Message, Renderer, ToolSpec } from '../../../renderers/types.js';
import { SandboxBackend, type CodeRunner } from '../../../sandbox/index.js';
import { codeRunner } from '../../../sandbox/shared-runner.js';
import { modelInputFromInts } from '../../../model-input.js';
import { buildAgentToolEnv, durableToolCalls, simpleToolResult, tool, toolDeclaring, type AgentToolMessageEnv, type RewardResult, type Tool, type ToolDeclaringRenderer } from '../../../tool-use/index.js';
import type { EnvFromMessageEnv } from '../../message-env.js';
import type { ContextualEnvGroupBuilder, RolloutContext } from '../../rollout-context.js';
import { actAlways, type Once } from '../../side-effects.js';
import { BaseEnvGroupBuilder, STOP_METRIC_PREFIX, StopReason, type Env, type EnvGroupBuilder, type RLDataset } from '../../types.js';
import { parseEnvArgs } from '../args.js';
import { extractCodeFromModel, sandboxCheckCorrectness, type Verdict } from './grading.js';
import { CodeRLHfSchema, loadCodeTaskFile, loadDeepCoderHf, type CodeTask, type LoadedCodeTasks } from './tasks.js';

export interface CodeEnvOptions {
  runner: CodeRunner;
  maxTurns: number;
  /** Seconds per test. */
  timeout: number;
  formatCoef: number;
  maxTrajectoryTokens: number;
  maxGenerationTokens: number | null;
  contextOverflowReward: number;
  /**
   * Grade every episode's last answer in the sandbox: one with no fenced block is run whole, one cut
   * at max_tokens is graded instead of ending with context_overflow_reward (the reference runs
   * neither). For smoke runs of tiny models, which write neither fences nor stop tokens.
   */
  gradeAnyAnswer: boolean;
}

/** The sandbox run of `code` against the task's tests, at most once per `key` of the rollout. */
function durableCheck(once: Once, task: CodeTask, opts: CodeEnvOptions, key: Array<string | number>, code: string): Promise<Verdict> {
  const request = `check_solution sha256:${createHash('sha256').update(code).digest('hex')} timeout:${opts.timeout}`;
  return once(key, request, () => sandboxCheckCorrectness(opts.runner, task.tests, code, opts.timeout));
}

/** The reference's DeepcoderTool.check_solution, bound to one task. */
export function checkSolutionTool(task: CodeTask, opts: Pick<CodeEnvOptions, 'runner' | 'timeout'>): Tool {
  return tool({
    name: 'check_solution',
    // Python's __doc__ of the reference's method, indentation included, so the model sees the same declaration.
    description: "Execute the proposed solution against the task's test cases.\n\n        Use this to test your code before providing your final answer.\n        ",
    parameters: z.object({ code: z.string().describe('Python code implementing the solution.') }),
    run: async ({ code }) => {
      // Durable as a tool call (durableToolCalls records the whole result), so this runs the sandbox directly.
      const [passed, details] = await sandboxCheckCorrectness(opts.runner, task.tests, code, opts.timeout);
      return simpleToolResult(pyJsonDumps({ passed, details }));
    },
  });
}

/** The reference's DeepcoderReward: grades the last assistant message's code. */
export function codeReward(task: CodeTask, opts: CodeEnvOptions, once: Once, episode: number) {
  return async (history: Message[]): Promise<RewardResult> => {
    const final = [...history].reverse().find((m) => m.role === 'assistant');
    if (!final) return [0.0, { format: 0.0, correct: 0.0 }];
    const content = getTextContent(final);
    const fenced = extractCodeFromModel(content);
    const code = fenced ?? (opts.gradeAnyAnswer ? content : null);
    let correct = 0.0;
    if (code !== null) {
      const [passed] = await durableCheck(once, task, opts, ['sandbox', `episode_${episode}`, 'final_answer'], code);
      correct = passed ? 1.0 : 0.0;
    }
    const format = fenced !== null ? 1.0 : 0.0;
    return [opts.formatCoef * (format - 1.0) + correct, { format, correct }];
  };
}

/**
 * The env, but an answer cut at max_tokens ends the episode graded (parsed leniently) rather than
 * with context_overflow_reward. Its `step` is replaced on the instance so the properties the
 * rollout runner sets on an env (limits, parse-error policy, hooks) reach the env itself.
 */
function gradingCutAnswers(env: EnvFromMessageEnv, reward: (history: Message[]) => Promise<RewardResult>): EnvFromMessageEnv {
  const step = env.step.bind(env);
  const history = () => (env.messageEnv as AgentToolMessageEnv).history;
  env.step = async (action, opts) => {
    if ((opts?.extra?.stop_reason ?? 'stop') !== 'length') return step(action, opts);
    const message = env.renderer.parseResponse(action).message;
    const [total, metrics] = await reward([...history(), message]);
    return {
      reward: total,
      episodeDone: true,
      nextObservation: modelInputFromInts([]),
      nextStopCondition: env.renderer.getStopSequences(),
      metrics: { ...metrics, max_tokens_reached: 1.0, [`${STOP_METRIC_PREFIX}${StopReason.MAX_TOKENS}`]: 1.0 },
      logs: { assistant_content: getTextContent(message) },
    };
  };
  return env;
}

export class CodeEnvGroupBuilder extends BaseEnvGroupBuilder implements ContextualEnvGroupBuilder {
  private episodes = 0;
  constructor(
    readonly task: CodeTask,
    readonly renderer: ToolDeclaringRenderer,
    readonly groupSize: number,
    readonly opts: CodeEnvOptions,
    private readonly ctx: RolloutContext | null = null,
  ) {
    super();
  }

  withContext(ctx: RolloutContext): EnvGroupBuilder {
    return new CodeEnvGroupBuilder(this.task, this.renderer, this.groupSize, this.opts, ctx);
  }

  async makeEnvs(): Promise<Env[]> {
    const once = this.ctx?.once ?? actAlways;
    return Array.from({ length: this.groupSize }, () => {
      const episode = this.episodes++;
      const check = checkSolutionTool(this.task, this.opts);
      const initial: Message[] = [...this.renderer.createConversationPrefixWithTools([check.toSpec()]), { role: 'user', content: this.task.problem }];
      const reward = codeReward(this.task, this.opts, once, episode);
      const env = buildAgentToolEnv(this.renderer, [check], initial, reward, {
        maxTurns: this.opts.maxTurns,
        maxTrajectoryTokens: this.opts.maxTrajectoryTokens,
        maxGenerationTokens: this.opts.maxGenerationTokens,
        contextOverflowReward: this.opts.contextOverflowReward,
        toolCallRunner: durableToolCalls(once, episode),
      });
      return this.opts.gradeAnyAnswer ? gradingCutAnswers(env, reward) : env;
    });
  }

  override loggingTags(): string[] {
    return ['deepcoder'];
  }
}

export class CodeDataset implements RLDataset {
  constructor(
    readonly builders: readonly CodeEnvGroupBuilder[],
    readonly batchSize: number,
  ) {}
  get length(): number {
    return Math.floor(this.builders.length / this.batchSize);
  }
  getBatch(index: number): EnvGroupBuilder[] {
    return this.builders.slice(index * this.batchSize, (index + 1) * this.batchSize);
  }
}

export const CodeRLArgsSchema = z
  .strictObject({
    batch_size: z.int().positive(),
    group_size: z.int().positive(),
    /** Problems in DeepCoder's row layout (JSONL or a JSON array), relative to the repository root. */
    train_file: z.string().min(1).nullable().default(null),
    /** Evaluated one sample per problem, as the reference's test split. */
    test_file: z.string().min(1).nullable().default(null),
    /** The DeepCoder dataset itself (a Hub id or a local snapshot folder; see CodeRLHfSchema), instead of train_file/test_file. */
    hf: CodeRLHfSchema.nullable().default(null),
    /** Shuffles the `hf` train rows, as the reference's load_deepcoder_tasks (files keep their order). */
    seed: z.int().nonnegative().default(0),
    /** Drop malformed rows (listed in a warning) instead of refusing the dataset. */
    skip_bad_rows: z.boolean().default(false),
    max_turns: z.int().positive().default(2),
    format_coef: z.number().default(0.1),
    /** Seconds per test. */
    timeout: z.int().positive().default(6),
    /** `local` (this host, isolated) or `sandboxfusion` (SANDBOX_URL); default: sandboxfusion when SANDBOX_URL is set. */
    sandbox_backend: z.enum([SandboxBackend.LOCAL, SandboxBackend.SANDBOXFUSION]).nullable().default(null),
    max_trajectory_tokens: z.int().positive().default(32 * 1024),
    max_generation_tokens: z.int().positive().nullable().default(null),
    context_overflow_reward: z.number().default(-0.1),
    /** Grade every last answer, unfenced or cut at max_tokens (not in the reference; for tiny models). */
    grade_any_answer: z.boolean().default(false),
  })
  .superRefine((a, ctx) => {
    if ((a.train_file === null) === (a.hf === null)) ctx.addIssue({ code: 'custom', path: ['train_file'], message: 'set train_file or hf (one of them)' });
    if (a.hf !== null && a.test_file !== null) ctx.addIssue({ code: 'custom', path: ['test_file'], message: 'set test_file with train_file; with hf, hf.test_subsets name the test set' });
  });

export { codeRunner };

/** Rows dropped under skip_bad_rows, said once per load (the first few by name). */
function warnSkipped(loaded: LoadedCodeTasks, what: string): void {
  if (!loaded.skipped.length) return;
  const shown = loaded.skipped.slice(0, 5).join('\n  ');
  console.warn(`[cookbook] code_rl: skipped ${loaded.skipped.length} bad row(s) of ${what} (skip_bad_rows):\n  ${shown}${loaded.skipped.length > 5 ? '\n  …' : ''}`);
}

export async function buildCodeRLDatasets(args: Record<string, unknown>, renderer: Renderer, repoRoot: string): Promise<{ train: RLDataset; test?: RLDataset }> {
  const a = parseEnvArgs(CodeRLArgsSchema, args, 'code_rl');
  const declaring = toolDeclaring(renderer, 'code_rl');
  const opts: CodeEnvOptions = {
    runner: codeRunner(a.sandbox_backend),
    maxTurns: a.max_turns,
    timeout: a.timeout,
    formatCoef: a.format_coef,
    maxTrajectoryTokens: a.max_trajectory_tokens,
    maxGenerationTokens: a.max_generation_tokens,
    contextOverflowReward: a.context_overflow_reward,
    gradeAnyAnswer: a.grade_any_answer,
  };
  let train: CodeTask[];
  let test: CodeTask[] | null = null;
  const source = a.hf !== null ? a.hf.path : a.train_file!;
  if (a.hf !== null) {
    const loaded = await loadDeepCoderHf(a.hf, { baseDir: repoRoot, seed: a.seed, skipBadRows: a.skip_bad_rows });
    warnSkipped(loaded.train, `${a.hf.path} (train)`);
    if (loaded.test) warnSkipped(loaded.test, `${a.hf.path} (test)`);
    train = loaded.train.tasks;
    test = loaded.test && loaded.test.tasks.length ? loaded.test.tasks : null;
  } else {
    const loaded = loadCodeTaskFile(path.resolve(repoRoot, a.train_file!), a.train_file!, { skipBadRows: a.skip_bad_rows });
    warnSkipped(loaded, a.train_file!);
    train = loaded.tasks;
    if (a.test_file !== null) {
      const loadedTest = loadCodeTaskFile(path.resolve(repoRoot, a.test_file), a.test_file, { skipBadRows: a.skip_bad_rows });
      warnSkipped(loadedTest, a.test_file);
      test = loadedTest.tasks;
    }
  }
  if (a.batch_size > train.length) throw new ConfigurationError(`dataset.args.batch_size: ${a.batch_size} exceeds the ${train.length} problems of ${source}`);
  return {
    train: new CodeDataset(train.map((t) => new CodeEnvGroupBuilder(t, declaring, a.group_size, opts)), a.batch_size),
    test: test ? new CodeDataset(test.map((t) => new CodeEnvGroupBuilder(t, declaring, 1, opts)), test.length) : undefined,
  };
}
