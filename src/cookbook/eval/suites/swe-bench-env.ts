// One swe_bench episode (reference 0.6.1 eval/benchmarks/_swe_bench.py _SWEBenchEnvFactory): a
// sandbox of the suite's image (git, python and pytest, no network), the row's repo cloned into
// /workspace/repo and checked out at its base commit, the test patch applied (git apply, else
// --3way), the reference's system prompt, user message and bash tool, and the reward of pytest's
// exit code on the FAIL_TO_PASS tests. The clone comes from a local mirror under
// terminal.repos_dir when it holds the repo (a git bundle of it written into the sandbox and
// cloned there), else from GitHub as the reference's; a clone or checkout that fails is the
// task's SKIPPED, with the command's exit and stderr as the reason. It runs on the terminal
// suite's machinery: its backends, the durable sandbox that records every operation by position
// (so a retried chunk runs nothing again) and the agent tool env.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { cacheRoot } from '../../../stack/cache.mjs';
import { engineVenvPath } from '../../../stack/engine-env.mjs';
import { ConfigurationError } from '../../errors.js';
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
import { sweBenchSystemPrompt, sweBenchUserPrompt, type SweBenchTask } from './swe-bench.js';
import { TaskSkippedError } from './terminal-results.js';
import { withEpisodeEndLogs } from '../../rl/message-env.js';

const REPO = '/workspace/repo';
const COMMAND_TIMEOUT = 120;
const MAX_OUTPUT_BYTES = 16000;
const STDOUT_CHARS = 10000;
const STDOUT_EDGE = 5000;
const STDERR_CHARS = 4000;
const TEST_TIMEOUT = 120;
const SETUP_TIMEOUT = 300;
const PATCH_TIMEOUT = 60;

/** Python's s[a:b] on code points (the reference slices str, not UTF-16 units). */
const pySlice = (s: string, start: number, end?: number) => {
  const cps = [...s];
  return cps.slice(start < 0 ? Math.max(cps.length + start, 0) : start, end).join('');
};

/** Python's shlex.quote: a word of safe characters as it is, anything else in single quotes. */
export function shlexQuote(s: string): string {
  if (!s) return "''";
  if (!/[^\w@%+=:,./-]/.test(s)) return s;
  return `'${s.replace(/'/g, `'"'"'`)}'`;
}

/** The reference's _SWEBashTool output: stdout's middle elided past 10000 characters with a warning, stderr cut at 4000, as JSON. */
export function formatSweBashOutput(result: { exitCode: number; stdout: string; stderr: string }): string {
  let { stdout, stderr } = result;
  const length = [...stdout].length;
  if (length > STDOUT_CHARS) {
    stdout = `${pySlice(stdout, 0, STDOUT_EDGE)}\n\n[... ${length - STDOUT_CHARS} characters elided ...]\n\n${pySlice(stdout, -STDOUT_EDGE)}\n[Output truncated. Use head/tail/grep for smaller output.]`;
  }
  if ([...stderr].length > STDERR_CHARS) stderr = `${pySlice(stderr, 0, STDERR_CHARS)}\n[stderr truncated]`;
  return pyJsonDumps({ exit_code: result.exitCode, stdout, stderr });
}

/** The command the reference's bash tool runs: the model's behind pager and progress-bar settings. */
export const wrapSweCommand = (command: string) => `PAGER=cat MANPAGER=cat PIP_PROGRESS_BAR=off TQDM_DISABLE=1 ${command}`;

/** The reference's _SWEBashTool.bash: at /workspace/repo, 120 s, 16000 bytes of output. */
export function sweBenchBashTool(sandbox: SandboxInterface): Tool {
  return tool({
    name: 'bash',
    description: 'Execute a bash command in the repository sandbox.',
    parameters: z.object({ command: z.string().describe('The bash command to execute.') }),
    run: async ({ command }) => {
      const result = await sandbox.runCommand(wrapSweCommand(command), { workdir: REPO, timeout: COMMAND_TIMEOUT, maxOutputBytes: MAX_OUTPUT_BYTES });
      return simpleToolResult(formatSweBashOutput(result));
    },
  });
}

/** The reference's grading command: every FAIL_TO_PASS test in one pytest run. */
export const sweTestCommand = (failToPass: readonly unknown[]) => `cd ${REPO} && python -m pytest ${failToPass.map((t) => shlexQuote(String(t))).join(' ')} --tb=short 2>&1`;

/** What the report shows of the test run. */
export interface SweTestRun {
  exitCode: number | null;
  output: string;
  error: string | null;
}

/** The reference's _SWEBenchReward: 1 when pytest on the FAIL_TO_PASS tests exits 0; correct, num_turns, num_tests_total. */
export function sweBenchReward(sandbox: SandboxInterface, failToPass: readonly unknown[], onTestRun?: (run: SweTestRun) => void): (history: Message[]) => Promise<RewardResult> {
  return async (history) => {
    if (!failToPass.length) return [0.0, { no_tests: 1.0 }];
    let passed = false;
    try {
      const run = await sandbox.runCommand(sweTestCommand(failToPass), { timeout: TEST_TIMEOUT });
      passed = run.exitCode === 0;
      onTestRun?.({ exitCode: run.exitCode, output: `${run.stdout}${run.stderr}`.slice(-2000), error: null });
    } catch (e) {
      onTestRun?.({ exitCode: null, output: '', error: (e as Error).message });
    }
    const numTurns = history.filter((m) => m.role === 'assistant').length;
    return [passed ? 1.0 : 0.0, { correct: passed ? 1.0 : 0.0, num_turns: numTurns, num_tests_total: failToPass.length }];
  };
}

/**
 * pytest and its pure-Python dependencies, as the image carries them under /opt/pylib (the sandbox
 * has no network to pip install). Not pygments: the host's Debian python, which the local backend's
 * sandboxes run, has it, and at 2.7 MB gzip'd it would weigh on every snapshot the durable sandbox
 * records of the episode's files.
 */
const PYLIB_PACKAGES = ['pytest', '_pytest', 'pluggy', 'iniconfig', 'packaging', 'py.py'];

/** The image: the host's git and python (as python too), pytest on PYTHONPATH, /workspace. */
export const SWE_BENCH_DOCKERFILE = `FROM python:3.11-slim-bookworm
COPY pylib /opt/pylib
ENV PYTHONPATH=/opt/pylib
ENV PATH=/usr/local/sbin:/usr/local/bin:/opt/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN mkdir -p /opt/bin && ln -sf /usr/bin/python3 /opt/bin/python
WORKDIR /workspace
`;

/** The engine venv's site-packages, where the image's pytest comes from. */
function engineSitePackages(): string {
  const lib = path.join(engineVenvPath(), 'lib');
  const py = existsSync(lib) ? readdirSync(lib).find((d) => /^python3\.\d+$/.test(d)) : undefined;
  const site = py ? path.join(lib, py, 'site-packages') : null;
  if (!site || !existsSync(path.join(site, 'pytest'))) throw new ConfigurationError(`swe_bench's image takes pytest from the engine venv, and ${engineVenvPath()} has none (start the stack once to build it)`);
  return site;
}

/** The suite's image as a task the terminal backends build: environment/Dockerfile and the pylib it copies. */
export function sweBenchImageTask(): HarborTask {
  const taskDir = path.join(cacheRoot(), 'swe-bench-image');
  const envDir = path.join(taskDir, 'environment');
  const site = engineSitePackages();
  // What the pylib was copied from and which packages: a change of either copies it again.
  const marker = path.join(envDir, 'pylib.source');
  const source = `${site}\n${PYLIB_PACKAGES.join(' ')}\n`;
  if (!existsSync(marker) || readFileSync(marker, 'utf8') !== source || readFileSync(path.join(envDir, 'Dockerfile'), 'utf8') !== SWE_BENCH_DOCKERFILE) {
    // Made aside and moved in whole, so a build in another process never reads a half-copied context.
    const staging = `${envDir}.${process.pid}.${Date.now()}`;
    mkdirSync(path.join(staging, 'pylib'), { recursive: true });
    const names = readdirSync(site);
    for (const pkg of PYLIB_PACKAGES) {
      const infos = names.filter((n) => n.toLowerCase().startsWith(`${pkg.toLowerCase()}-`) && n.endsWith('.dist-info'));
      for (const n of [pkg, ...infos]) if (existsSync(path.join(site, n))) cpSync(path.join(site, n), path.join(staging, 'pylib', n), { recursive: true, filter: (f) => !f.includes('__pycache__') });
    }
    writeFileSync(path.join(staging, 'Dockerfile'), SWE_BENCH_DOCKERFILE);
    writeFileSync(path.join(staging, 'pylib.source'), source);
    rmSync(envDir, { recursive: true, force: true });
    renameSync(staging, envDir);
  }
  return { taskName: 'swe-bench-image', instruction: '', taskDir, config: {} };
}

/** The repo's local mirror under `reposDir`: <owner>__<name> or <owner>/<name>, bare (.git) or not; null when none. */
export function findMirror(reposDir: string, repo: string): string | null {
  const [owner, name] = repo.split('/');
  if (!owner || !name) return null;
  for (const base of [`${owner}__${name}`, path.join(owner, name)]) {
    for (const p of [base, `${base}.git`]) {
      const dir = path.resolve(reposDir, p);
      if (existsSync(path.join(dir, 'HEAD')) || existsSync(path.join(dir, '.git'))) return dir;
    }
  }
  return null;
}

/** Every ref of the mirror as one git bundle, to clone inside the sandbox. */
function mirrorBundle(mirror: string): Buffer {
  const r = spawnSync('git', ['-C', mirror, 'bundle', 'create', '-', '--all'], { maxBuffer: 1 << 30, env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' } });
  if (r.status !== 0) throw new TaskSkippedError(`swe_bench setup failed: cannot bundle the mirror ${mirror}: ${r.stderr.toString('utf8').slice(0, 300)}`);
  return r.stdout;
}

/** The reference's clone and checkout (from the mirror when there is one); a command that fails skips the task with its reason. */
async function cloneRepo(sandbox: SandboxInterface, task: SweBenchTask, reposDir: string | null): Promise<void> {
  const mirror = reposDir === null ? null : findMirror(reposDir, task.repo);
  const commit = shlexQuote(task.baseCommit);
  let cmds: string[];
  if (mirror) {
    await sandbox.writeFile('/workspace/mirror.bundle', mirrorBundle(mirror));
    cmds = [`git clone -q /workspace/mirror.bundle ${REPO} && rm /workspace/mirror.bundle`, `cd ${REPO} && git checkout ${commit}`];
  } else {
    const url = `https://github.com/${shlexQuote(task.repo)}.git`;
    cmds = [`git clone --depth=50 ${url} ${REPO}`, `cd ${REPO} && git fetch --depth=50 origin ${commit}`, `cd ${REPO} && git checkout ${commit}`];
  }
  for (const cmd of cmds) {
    const r = await sandbox.runCommand(cmd, { timeout: SETUP_TIMEOUT });
    if (r.exitCode !== 0) {
      const where = reposDir === null ? 'no terminal.repos_dir' : mirror ? `mirror ${mirror}` : `no mirror of ${task.repo} in ${reposDir}`;
      throw new TaskSkippedError(`swe_bench setup failed (exit ${r.exitCode}): ${pySlice(cmd, 0, 100)}  stderr=${pySlice(r.stderr, 0, 300)} (${where})`);
    }
  }
}

/** The reference's test patch: git apply, else git apply --3way; a patch that applies neither way is left out, as there. */
async function applyTestPatch(sandbox: SandboxInterface, patch: string): Promise<void> {
  if (!patch.trim()) return;
  try {
    await sandbox.writeFile('/workspace/test_patch.diff', patch);
    const r = await sandbox.runCommand(`cd ${REPO} && git apply /workspace/test_patch.diff`, { timeout: PATCH_TIMEOUT });
    if (r.exitCode !== 0) await sandbox.runCommand(`cd ${REPO} && git apply --3way /workspace/test_patch.diff`, { timeout: PATCH_TIMEOUT });
  } catch {
    // the reference logs a warning and goes on
  }
}

/** The reference's EnvFromMessageEnv settings: a parse error or a context overflow earns 0 and the episode goes on past a parse error. */
export const SWE_BENCH_ENV_SETTINGS = { failedParseReward: 0.0, terminateOnParseError: false, contextOverflowReward: 0.0 } as const;

/** The reference's setup before the first sample: the clone at the base commit, then the test patch. */
export async function setUpRepo(sandbox: SandboxInterface, task: SweBenchTask, reposDir: string | null): Promise<void> {
  await cloneRepo(sandbox, task, reposDir);
  await applyTestPatch(sandbox, task.testPatch);
}

const verdictText = (reward: number, run: SweTestRun) =>
  `${`reward ${reward} · pytest exit ${run.exitCode ?? 'none'}${run.error ? ` · test error: ${run.error}` : ''}`}${run.output.trim() ? `\n${run.output.trim()}` : ''}`;

export class SweBenchEnvGroupBuilder extends BaseEnvGroupBuilder implements ContextualEnvGroupBuilder {
  private episodes = 0;
  private sandboxes: DurableSandbox[] = [];
  constructor(
    readonly task: SweBenchTask,
    readonly renderer: ToolDeclaringRenderer,
    readonly opts: TerminalEnvOptions,
    readonly reposDir: string | null,
    /** The eval's system_prompt; null or '' keeps the reference's. */
    readonly systemPrompt: string | null = null,
    private readonly ctx: RolloutContext | null = null,
  ) {
    super();
  }

  withContext(ctx: RolloutContext): EnvGroupBuilder {
    return new SweBenchEnvGroupBuilder(this.task, this.renderer, this.opts, this.reposDir, this.systemPrompt, ctx);
  }

  async makeEnvs(): Promise<Env[]> {
    const once = this.ctx?.once ?? actAlways;
    const limits = { storageBytes: this.opts.storageBytes, memoryBytes: this.opts.memoryBytes, maxProcesses: this.opts.maxProcesses };
    const environment = await (this.opts.backend ?? localBackend).environment(sweBenchImageTask(), limits);
    const sandbox = new DurableSandbox({ once, episode: this.episodes++, image: environment.files, open: environment.open, lifetimeSeconds: this.opts.sandboxTimeout });
    this.sandboxes.push(sandbox);
    await setUpRepo(sandbox, this.task, this.reposDir);
    const bash = sweBenchBashTool(sandbox);
    let testRun: SweTestRun | null = null;
    const reward = sweBenchReward(sandbox, this.task.failToPass, (run) => (testRun = run));
    const messages: Message[] = [
      ...this.renderer.createConversationPrefixWithTools([bash.toSpec()], sweBenchSystemPrompt(this.systemPrompt)),
      { role: 'user', content: sweBenchUserPrompt(this.task) },
    ];
    const env = buildAgentToolEnv(this.renderer, [bash], messages, reward, {
      maxTurns: this.opts.maxTurns,
      maxTrajectoryTokens: this.opts.maxTrajectoryTokens,
      maxGenerationTokens: this.opts.maxGenerationTokens,
      ...SWE_BENCH_ENV_SETTINGS,
      // One command at a time, in the order the model wrote them: the repo is one state.
      toolExecution: 'sequential',
    });
    withEpisodeEndLogs(env, (reward) => {
      const run = testRun as SweTestRun | null;
      return { example_id: this.task.taskName, instance_id: this.task.instanceId, repo: this.task.repo, ...(run ? { test_verdict: verdictText(reward, run) } : {}) };
    });
    return [env];
  }

  override async cleanup(): Promise<void> {
    const all = this.sandboxes;
    this.sandboxes = [];
    await Promise.all(all.map((s) => s.cleanup().catch(() => {})));
  }

  override loggingTags(): string[] {
    return ['swe_bench'];
  }
}
