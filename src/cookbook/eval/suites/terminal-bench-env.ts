// One terminal_bench episode (reference 0.6.1 eval/benchmarks/_terminal_bench.py
// _TerminalBenchEnvFactory): a sandbox of the generic image (not the task's Dockerfile), the task's
// files written under /app and run-tests.sh to /app/run_tests.sh, the reference's system prompt,
// `## Task` message and bash tool, and the reward of run_tests.sh's exit code. It runs on the
// terminal suite's machinery: its backends, the durable sandbox that records every operation by
// position (so a retried chunk runs nothing again) and the agent tool env.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { cacheRoot } from '../../../stack/cache.mjs';
import { pyJsonDumps } from '../../pyjson.js';
import type { Message } from '../../renderers/types.js';
import type { TerminalEnvOptions } from '../../rl/envs/terminal/env.js';
import { localBackend } from '../../rl/envs/terminal/backend.js';
import { DurableSandbox } from '../../rl/envs/terminal/durable-sandbox.js';
import type { HarborTask } from '../../rl/envs/terminal/tasks.js';
import type { ContextualEnvGroupBuilder, RolloutContext } from '../../rl/rollout-context.js';
import { actAlways } from '../../rl/side-effects.js';
import { BaseEnvGroupBuilder, type Env, type EnvGroupBuilder } from '../../rl/types.js';
import type { SandboxInterface } from '../../sandbox/types.js';
import { buildAgentToolEnv, simpleToolResult, tool, type RewardResult, type Tool, type ToolDeclaringRenderer } from '../../tool-use/index.js';
import type { TerminalBenchTask } from './terminal-bench.js';
import { withEpisodeEndLogs } from '../../rl/message-env.js';

export const TERMINAL_BENCH_SYSTEM_PROMPT = `You are an expert Linux/Unix systems administrator solving a terminal task in a sandboxed environment.

For each response:
1. Include reasoning explaining what you're trying to accomplish
2. Use the bash tool to execute commands

## Workflow

1. Read the task description carefully
2. Plan your approach
3. Execute commands step by step
4. Verify your work before stopping

## Important Rules

- Your working directory is /app
- You can install packages, create files, run scripts
- Use non-interactive commands only (no vi, nano, etc.)
- Use sed, awk, or python for file editing
- When you are done, stop calling tools

## Environment

- Fresh Linux environment with bash, python3, git, curl, build-essential
- PAGER=cat (no interactive paging)`;

const COMMAND_TIMEOUT = 60;
const MAX_OUTPUT_BYTES = 16000;
const STDOUT_CHARS = 10000;
const STDOUT_EDGE = 5000;
const STDERR_CHARS = 2000;
const TEST_TIMEOUT = 120;
export const TEST_COMMAND = 'cd /app && TEST_DIR=/app/tests bash run_tests.sh 2>&1';

/** Python's s[a:b] on code points (the reference slices str, not UTF-16 units). */
const pySlice = (s: string, start: number, end?: number) => {
  const cps = [...s];
  return cps.slice(start < 0 ? Math.max(cps.length + start, 0) : start, end).join('');
};

/** The reference's _BashTool output: stdout's middle elided past 10000 characters, stdout and stderr cut, as JSON. */
export function formatBashOutput(result: { exitCode: number; stdout: string; stderr: string }): string {
  let stdout = result.stdout;
  const length = [...stdout].length;
  if (length > STDOUT_CHARS) stdout = `${pySlice(stdout, 0, STDOUT_EDGE)}\n\n[... ${length - STDOUT_CHARS} chars elided ...]\n\n${pySlice(stdout, -STDOUT_EDGE)}`;
  return pyJsonDumps({ exit_code: result.exitCode, stdout: pySlice(stdout, 0, STDOUT_CHARS), stderr: pySlice(result.stderr, 0, STDERR_CHARS) });
}

/** The reference's _BashTool.bash: the command behind PAGER=cat MANPAGER=cat, at /app, 60 s, 16000 bytes of output. */
export function terminalBenchBashTool(sandbox: SandboxInterface): Tool {
  return tool({
    name: 'bash',
    description: 'Execute a bash command in the sandbox environment.',
    parameters: z.object({ command: z.string().describe('The bash command to execute.') }),
    run: async ({ command }) => {
      const result = await sandbox.runCommand(`PAGER=cat MANPAGER=cat ${command}`, { workdir: '/app', timeout: COMMAND_TIMEOUT, maxOutputBytes: MAX_OUTPUT_BYTES });
      return simpleToolResult(formatBashOutput(result));
    },
  });
}

/** What the report shows of the test run. */
export interface TestRun {
  exitCode: number | null;
  output: string;
  error: string | null;
}

/** The reference's _TerminalBenchReward: 1 when run_tests.sh exits 0; correct, num_turns and num_commands from the history. */
export function terminalBenchReward(sandbox: SandboxInterface, testScript: string, onTestRun?: (run: TestRun) => void): (history: Message[]) => Promise<RewardResult> {
  return async (history) => {
    if (!testScript) return [0.0, { no_test_script: 1.0 }];
    let passed = false;
    try {
      const run = await sandbox.runCommand(TEST_COMMAND, { timeout: TEST_TIMEOUT });
      passed = run.exitCode === 0;
      onTestRun?.({ exitCode: run.exitCode, output: `${run.stdout}${run.stderr}`.slice(-2000), error: null });
    } catch (e) {
      onTestRun?.({ exitCode: null, output: '', error: (e as Error).message });
    }
    const assistant = history.filter((m) => m.role === 'assistant');
    const numCommands = assistant.filter((m) => m.tool_calls && m.tool_calls.length > 0).length;
    return [passed ? 1.0 : 0.0, { correct: passed ? 1.0 : 0.0, num_turns: assistant.length, num_commands: numCommands }];
  };
}

/** The generic image's Dockerfile (the reference gives every task one plain Python image, not its own). */
export const GENERIC_DOCKERFILE = 'FROM python:3.11-slim-bookworm\nWORKDIR /app\n';

/** The generic image as a task the terminal backends build: a folder holding environment/Dockerfile. */
export function genericImageTask(): HarborTask {
  const taskDir = path.join(cacheRoot(), 'terminal-bench-image');
  const dockerfile = path.join(taskDir, 'environment', 'Dockerfile');
  if (!existsSync(dockerfile) || readFileSync(dockerfile, 'utf8') !== GENERIC_DOCKERFILE) {
    mkdirSync(path.dirname(dockerfile), { recursive: true });
    writeFileSync(dockerfile, GENERIC_DOCKERFILE);
  }
  return { taskName: 'terminal-bench-generic', instruction: '', taskDir, config: {} };
}

/** The reference's initial_observation before its first sample: /app/tests, the task's files, /app/run_tests.sh. */
async function writeTaskFiles(sandbox: SandboxInterface, task: TerminalBenchTask): Promise<void> {
  await sandbox.runCommand('mkdir -p /app/tests', { timeout: 10 });
  for (const [file, content] of task.setupFiles) {
    const dest = `/app/${file}`;
    const parent = dest.split('/').slice(0, -1).join('/');
    // As the reference: a file that cannot be written is left out (it logs a warning).
    try {
      if (parent) await sandbox.runCommand(`mkdir -p ${parent}`, { timeout: 10 });
      await sandbox.writeFile(dest, content, { executable: file.endsWith('.sh') });
    } catch {
      continue;
    }
  }
  if (task.testScript) await sandbox.writeFile('/app/run_tests.sh', task.testScript, { executable: true });
}

/** The verdict line the report and results.json show for the test run. */
const verdictText = (reward: number, run: TestRun) =>
  `${`reward ${reward} · run_tests.sh exit ${run.exitCode ?? 'none'}${run.error ? ` · test error: ${run.error}` : ''}`}${run.output.trim() ? `\n${run.output.trim()}` : ''}`;

export class TerminalBenchEnvGroupBuilder extends BaseEnvGroupBuilder implements ContextualEnvGroupBuilder {
  private episodes = 0;
  private sandboxes: DurableSandbox[] = [];
  constructor(
    readonly task: TerminalBenchTask,
    readonly renderer: ToolDeclaringRenderer,
    readonly opts: TerminalEnvOptions,
    private readonly ctx: RolloutContext | null = null,
  ) {
    super();
  }

  withContext(ctx: RolloutContext): EnvGroupBuilder {
    return new TerminalBenchEnvGroupBuilder(this.task, this.renderer, this.opts, ctx);
  }

  async makeEnvs(): Promise<Env[]> {
    const once = this.ctx?.once ?? actAlways;
    const limits = { storageBytes: this.opts.storageBytes, memoryBytes: this.opts.memoryBytes, maxProcesses: this.opts.maxProcesses };
    const environment = await (this.opts.backend ?? localBackend).environment(genericImageTask(), limits);
    const sandbox = new DurableSandbox({ once, episode: this.episodes++, image: environment.files, open: environment.open, lifetimeSeconds: this.opts.sandboxTimeout });
    this.sandboxes.push(sandbox);
    await writeTaskFiles(sandbox, this.task);
    const bash = terminalBenchBashTool(sandbox);
    let testRun: TestRun | null = null;
    const reward = terminalBenchReward(sandbox, this.task.testScript, (run) => (testRun = run));
    const messages: Message[] = [
      ...this.renderer.createConversationPrefixWithTools([bash.toSpec()], TERMINAL_BENCH_SYSTEM_PROMPT),
      { role: 'user', content: `## Task\n${this.task.instruction}` },
    ];
    const env = buildAgentToolEnv(this.renderer, [bash], messages, reward, {
      maxTurns: this.opts.maxTurns,
      maxTrajectoryTokens: this.opts.maxTrajectoryTokens,
      maxGenerationTokens: this.opts.maxGenerationTokens,
      contextOverflowReward: 0.0,
      failedParseReward: 0.0,
      terminateOnParseError: false,
      // One command at a time, in the order the model wrote them: the episode's files are one state.
      toolExecution: 'sequential',
    });
    withEpisodeEndLogs(env, (reward) => {
      const run = testRun as TestRun | null;
      return { example_id: this.task.taskName, ...(run ? { test_verdict: verdictText(reward, run) } : {}) };
    });
    return [env];
  }

  override async cleanup(): Promise<void> {
    const all = this.sandboxes;
    this.sandboxes = [];
    await Promise.all(all.map((s) => s.cleanup().catch(() => {})));
  }

  override loggingTags(): string[] {
    return ['terminal_bench'];
  }
}
