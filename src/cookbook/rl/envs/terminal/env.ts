// harbor_rl (reference 0.6.1 recipes/harbor_rl/harbor_env.py): RL on Harbor terminal tasks. Each
// episode gets its own sandbox started from the task's environment (its Dockerfile, built here
// without Docker: image.ts), a bash tool inside it, up to max_turns turns, and the reward the
// task's tests/test.sh gives once the agent stops. Every sandbox operation is recorded at its
// position in the episode (durable-sandbox.ts): a rollout retried after a crash runs nothing again.
import path from 'node:path';
import { z } from 'zod';
import { ConfigurationError } from '../../../errors.js';
import type { Message, Renderer } from '../../../renderers/types.js';
import { EPISODE_DEFAULTS, clearStaleEpisodeRoots } from '../../../sandbox/episode.js';
import { buildAgentToolEnv, toolDeclaring, type ToolDeclaringRenderer } from '../../../tool-use/index.js';
import { withEpisodeEndLogs, type EnvFromMessageEnv } from '../../message-env.js';
import type { ContextualEnvGroupBuilder, RolloutContext } from '../../rollout-context.js';
import { actAlways } from '../../side-effects.js';
import { BaseEnvGroupBuilder, type Env, type EnvGroupBuilder, type RLDataset } from '../../types.js';
import { parseEnvArgs } from '../args.js';
import { DurableSandbox } from './durable-sandbox.js';
import { localBackend, type TerminalBackend } from './backend.js';
import { terminalBackend } from './docker-backend.js';
import { harborDatasetDir, loadHarborTasks, type HarborTask } from './tasks.js';
import { bashTool, harborReward, type TestVerdict } from './tools.js';

export const HARBOR_SYSTEM_PROMPT =
  'You are a skilled software engineer working in a sandboxed environment. ' +
  'You have access to a bash tool to execute commands. ' +
  'Complete the task described by the user.';

export interface TerminalEnvOptions {
  maxTurns: number;
  /** Seconds of commands an episode's sandbox lives (the reference's sandbox_timeout). */
  sandboxTimeout: number;
  commandTimeout: number;
  graderTimeout: number;
  maxTrajectoryTokens: number | null;
  maxGenerationTokens: number | null;
  contextOverflowReward: number;
  /** Bytes an episode's files may take. */
  storageBytes: number;
  memoryBytes: number;
  maxProcesses: number;
  /** Where episodes run (default: this host's namespaces, backend.ts's localBackend). */
  backend?: TerminalBackend;
}

/** The reference's _initial_messages: the tool declared in the system prompt, then the instruction. */
export function initialMessages(task: HarborTask, renderer: ToolDeclaringRenderer, tools: ReturnType<typeof bashTool>[]): Message[] {
  return [...renderer.createConversationPrefixWithTools(tools.map((t) => t.toSpec()), HARBOR_SYSTEM_PROMPT), { role: 'user', content: task.instruction }];
}

/** The test verdict on the episode's last step's logs, where the report's rollout browser shows it. */
function withVerdictLog(env: EnvFromMessageEnv, verdict: () => TestVerdict | null): EnvFromMessageEnv {
  return withEpisodeEndLogs(env, (): Record<string, string> => {
    const v = verdict();
    if (!v) return {};
    const head = `reward ${v.reward} · test.sh exit ${v.exitCode ?? 'none'}${v.error ? ` · grading error: ${v.error}` : ''}`;
    return { test_verdict: v.output.trim() ? `${head}\n${v.output.trim()}` : head };
  });
}

export class TerminalEnvGroupBuilder extends BaseEnvGroupBuilder implements ContextualEnvGroupBuilder {
  private episodes = 0;
  private sandboxes: DurableSandbox[] = [];
  constructor(
    readonly task: HarborTask,
    readonly renderer: ToolDeclaringRenderer,
    readonly groupSize: number,
    readonly opts: TerminalEnvOptions,
    private readonly ctx: RolloutContext | null = null,
  ) {
    super();
  }

  withContext(ctx: RolloutContext): EnvGroupBuilder {
    return new TerminalEnvGroupBuilder(this.task, this.renderer, this.groupSize, this.opts, ctx);
  }

  async makeEnvs(): Promise<Env[]> {
    const once = this.ctx?.once ?? actAlways;
    const limits = { storageBytes: this.opts.storageBytes, memoryBytes: this.opts.memoryBytes, maxProcesses: this.opts.maxProcesses };
    const environment = await (this.opts.backend ?? localBackend).environment(this.task, limits);
    return Array.from({ length: this.groupSize }, () => {
      const episode = this.episodes++;
      const sandbox = new DurableSandbox({
        once,
        episode,
        image: environment.files,
        open: environment.open,
        lifetimeSeconds: this.opts.sandboxTimeout,
      });
      this.sandboxes.push(sandbox);
      const bash = bashTool(sandbox, this.opts.commandTimeout);
      let verdict: TestVerdict | null = null;
      const reward = harborReward({ testsDir: path.join(this.task.taskDir, 'tests'), sandbox, graderTimeout: this.opts.graderTimeout, onVerdict: (v) => (verdict = v) });
      const env = buildAgentToolEnv(this.renderer, [bash], initialMessages(this.task, this.renderer, [bash]), reward, {
        maxTurns: this.opts.maxTurns,
        maxTrajectoryTokens: this.opts.maxTrajectoryTokens,
        maxGenerationTokens: this.opts.maxGenerationTokens,
        contextOverflowReward: this.opts.contextOverflowReward,
        // One command at a time, in the order the model wrote them: the episode's files are one state.
        toolExecution: 'sequential',
      });
      return withVerdictLog(env, () => verdict);
    });
  }

  override async cleanup(): Promise<void> {
    const all = this.sandboxes;
    this.sandboxes = [];
    await Promise.all(all.map((s) => s.cleanup().catch(() => {})));
  }

  override loggingTags(): string[] {
    return ['harbor'];
  }
}

/** The reference's HarborDataset: batches in task order, the last one possibly short. */
export class TerminalDataset implements RLDataset {
  constructor(
    readonly builders: readonly TerminalEnvGroupBuilder[],
    readonly batchSize: number,
  ) {}
  get length(): number {
    return Math.ceil(this.builders.length / this.batchSize);
  }
  getBatch(index: number): EnvGroupBuilder[] {
    return this.builders.slice(index * this.batchSize, (index + 1) * this.batchSize);
  }
}

const MiB = 1024 * 1024;

export const TerminalArgsSchema = z.strictObject({
  /** A folder of Harbor task folders (relative to the repository root), or a dataset name under ~/.cache/harbor/tasks/. */
  tasks: z.string().min(1),
  /** Task names to evaluate on (one sample each); the rest are trained on. Default: the same tasks. */
  test_tasks: z.array(z.string().min(1)).nullable().default(null),
  /** Task names to keep (default: all). */
  only: z.array(z.string().min(1)).nullable().default(null),
  batch_size: z.int().positive(),
  group_size: z.int().positive(),
  max_turns: z.int().positive().default(10),
  sandbox_timeout: z.number().positive().default(600),
  command_timeout: z.number().positive().default(120),
  grader_timeout: z.number().positive().default(60),
  max_trajectory_tokens: z.int().positive().default(32 * 1024),
  max_generation_tokens: z.int().positive().nullable().default(null),
  context_overflow_reward: z.number().default(-0.1),
  storage_mb: z.number().positive().default(EPISODE_DEFAULTS.storageBytes / MiB),
  memory_mb: z.number().positive().default(EPISODE_DEFAULTS.memoryBytes / MiB),
  max_processes: z.int().positive().default(EPISODE_DEFAULTS.maxProcesses),
  /** Where episodes run: a Docker container each (docker), this host's namespaces (local), or docker when an engine answers (auto). */
  sandbox_backend: z.enum(['auto', 'local', 'docker']).default('auto'),
});
export type TerminalArgs = z.output<typeof TerminalArgsSchema>;

export function terminalEnvOptions(a: TerminalArgs): TerminalEnvOptions {
  return {
    maxTurns: a.max_turns,
    sandboxTimeout: a.sandbox_timeout,
    commandTimeout: a.command_timeout,
    graderTimeout: a.grader_timeout,
    maxTrajectoryTokens: a.max_trajectory_tokens,
    maxGenerationTokens: a.max_generation_tokens,
    contextOverflowReward: a.context_overflow_reward,
    storageBytes: Math.floor(a.storage_mb * MiB),
    memoryBytes: Math.floor(a.memory_mb * MiB),
    maxProcesses: a.max_processes,
    backend: terminalBackend(a.sandbox_backend),
  };
}

/** The tasks a config names, in the reference's order. */
export function terminalTasks(a: Pick<TerminalArgs, 'tasks' | 'only'>, repoRoot: string): HarborTask[] {
  const all = loadHarborTasks(harborDatasetDir(a.tasks, repoRoot));
  if (!a.only) return all;
  const byName = new Map(all.map((t) => [t.taskName, t]));
  return a.only.map((name) => {
    const t = byName.get(name);
    if (!t) throw new ConfigurationError(`dataset.args.only: no task ${JSON.stringify(name)} in ${a.tasks} (it has ${[...byName.keys()].join(', ')})`);
    return t;
  });
}

export async function buildTerminalDatasets(args: Record<string, unknown>, renderer: Renderer, repoRoot: string): Promise<{ train: RLDataset; test?: RLDataset }> {
  const a = parseEnvArgs(TerminalArgsSchema, args, 'terminal');
  const declaring = toolDeclaring(renderer, 'terminal');
  const opts = terminalEnvOptions(a);
  const tasks = terminalTasks(a, repoRoot);
  let train = tasks;
  let test = tasks;
  if (a.test_tasks) {
    const names = new Set(a.test_tasks);
    for (const name of names) if (!tasks.some((t) => t.taskName === name)) throw new ConfigurationError(`dataset.args.test_tasks: no task ${JSON.stringify(name)} in ${a.tasks}`);
    test = tasks.filter((t) => names.has(t.taskName));
    train = tasks.filter((t) => !names.has(t.taskName));
  }
  if (!train.length) throw new ConfigurationError('dataset.args.test_tasks: every task is a test task; none is left to train on');
  clearStaleEpisodeRoots();
  return {
    train: new TerminalDataset(train.map((t) => new TerminalEnvGroupBuilder(t, declaring, a.group_size, opts)), a.batch_size),
    test: new TerminalDataset(test.map((t) => new TerminalEnvGroupBuilder(t, declaring, 1, opts)), a.batch_size),
  };
}
