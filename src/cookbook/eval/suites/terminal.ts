// The agentic `terminal` suite of `cookbook eval` (reference 0.6.1 recipes/harbor_rl/eval.py and
// scripts/eval_harbor_rl.py): each example is a Harbor task folder; the policy works it in one
// episode of up to max_turns bash turns in the task's sandbox, and the task's tests/test.sh gives
// the reward. PASS when the reward is above 0, FAIL otherwise, ERROR when the episode could not
// run (an image that does not build, a sandbox that died). This module holds what the config and
// the CLI need (the options, the defaults, the task list); terminal-run.ts runs the episodes.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { ConfigurationError } from '../../errors.js';
import { EPISODE_DEFAULTS } from '../../sandbox/episode.js';
import { harborDatasetDir, loadHarborTasks, type HarborTask } from '../../rl/envs/terminal/tasks.js';
import { loadTau2Tasks, TAU2_BENCH_SUITE, TAU2_MAX_TURNS, tau2Source, type Tau2Task } from './tau2-data.js';
import { loadTerminalBenchTasks, TERMINAL_BENCH_MAX_TURNS, TERMINAL_BENCH_SUITE, type TerminalBenchTask } from './terminal-bench.js';
import { loadSweBenchTasks, SWE_BENCH_MAX_TURNS, SWE_BENCH_SUITE, type SweBenchTask } from './swe-bench.js';

export const TERMINAL_SUITE = {
  name: 'terminal',
  description: 'Harbor terminal tasks, one agent episode each (bash tool, tests/test.sh grades); pass rate',
  data: 'data/terminal_tasks, a folder of Harbor task folders, or a dataset name under ~/.cache/harbor/tasks/',
} as const;

export const isAgenticSuite = (suite: string) => suite === TAU2_BENCH_SUITE.name || suite === TERMINAL_SUITE.name || suite === TERMINAL_BENCH_SUITE.name || suite === SWE_BENCH_SUITE.name;

/** Whether the suite's --data names Harbor task folders (terminal), not rows in an HF layout (terminal_bench). */
export const readsTaskFolders = (suite: string) => suite === TERMINAL_SUITE.name;

const MiB = 1024 * 1024;

/** The episode's settings (`--set terminal.max_turns=20`): the reference's EvalConfig defaults. */
export const TerminalEvalSchema = z.strictObject({
  max_turns: z.int().positive().default(10),
  /** Seconds of commands an episode's sandbox lives (the reference eval's sandbox_timeout). */
  sandbox_timeout: z.number().positive().default(3600),
  command_timeout: z.number().positive().default(120),
  grader_timeout: z.number().positive().default(60),
  /** null: no limit, as the reference's eval (its env gets no max_trajectory_tokens). */
  max_trajectory_tokens: z.int().positive().nullable().default(null),
  /** Task names to evaluate, in this order (default: every task of the folder). */
  only: z.array(z.string().min(1)).nullable().default(null),
  storage_mb: z.number().positive().default(EPISODE_DEFAULTS.storageBytes / MiB),
  memory_mb: z.number().positive().default(EPISODE_DEFAULTS.memoryBytes / MiB),
  max_processes: z.int().positive().default(EPISODE_DEFAULTS.maxProcesses),
  /** Where episodes run, as the RL env's sandbox_backend: docker, local, or auto (docker when an engine answers). */
  sandbox_backend: z.enum(['auto', 'local', 'docker']).default('auto'),
  /** swe_bench: a folder of local git mirrors (<owner>__<name> or <owner>/<name>, bare or not) its repos are cloned from; null: GitHub. */
  repos_dir: z.string().min(1).nullable().default(null),
});
export type TerminalEvalOptions = z.output<typeof TerminalEvalSchema>;

/** Config defaults of the suite where they differ from the single-turn suites' (the reference eval's max_tokens 2048, greedy). */
export const TERMINAL_CONFIG_DEFAULTS = { max_tokens: 2048, temperature: 0, terminal: {} } as const;

/** An agentic suite's config defaults: terminal's above; terminal_bench the benchmarks' sampling and the reference's MAX_TURNS. */
export const agenticConfigDefaults = (suite: string): Record<string, unknown> =>
  suite === TAU2_BENCH_SUITE.name ? { terminal: { max_turns: TAU2_MAX_TURNS } } : structuredClone(
    suite === TERMINAL_BENCH_SUITE.name ? { terminal: { max_turns: TERMINAL_BENCH_MAX_TURNS } } : suite === SWE_BENCH_SUITE.name ? { terminal: { max_turns: SWE_BENCH_MAX_TURNS } } : TERMINAL_CONFIG_DEFAULTS,
  );

const SHIPPED = path.join('data', 'terminal_tasks');

/** The shipped tasks: data/terminal_tasks of the nearest ancestor of this module that holds it. */
export function shippedTerminalTasksDir(shipped = SHIPPED): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, shipped))) return path.join(dir, shipped);
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new ConfigurationError(`cannot find ${shipped} above ${fileURLToPath(import.meta.url)}; name the tasks with --data`);
}

/** `--data` of the suite: a folder (absolute, or relative to `baseDir`), else a dataset name under ~/.cache/harbor/tasks/. */
export function terminalDataDir(dataPath: string | null, baseDir: string): string {
  if (dataPath === null) return shippedTerminalTasksDir();
  return harborDatasetDir(dataPath, baseDir);
}

/** A task of an agentic suite: a Harbor task folder (terminal) or a Terminal-Bench row (terminal_bench). */
export type TerminalEvalTask = HarborTask | TerminalBenchTask | SweBenchTask;

export interface TerminalEvalData {
  /** tau2_bench's tasks are conversations, not sandbox episodes (tau2-run.ts). */
  tasks: Array<TerminalEvalTask | Tau2Task>;
  source: string;
}

/** tau2_bench's tasks: --data's folder, else ~/.cache/tau2_bench when complete, else the shipped sample; `only` picks by example id. */
function loadTau2Eval(cfg: { data_path: string | null; limit: number | null; system_prompt?: string | null }, only: string[] | null): TerminalEvalData {
  const source = tau2Source(cfg.data_path, shippedTerminalTasksDir(path.join('data', 'eval', 'tau2_bench')));
  const all = loadTau2Tasks(source, only ? null : cfg.limit, cfg.system_prompt ?? null);
  if (!only) return { tasks: all, source };
  const byName = new Map(all.map((t) => [t.taskName, t]));
  const tasks = only.map((name) => {
    const t = byName.get(name);
    if (!t) throw new ConfigurationError(`terminal.only: no task ${JSON.stringify(name)} in ${source} (it has ${[...byName.keys()].join(', ')})`);
    return t;
  });
  return { tasks: cfg.limit === null ? tasks : tasks.slice(0, cfg.limit), source };
}

/** terminal_bench's or swe_bench's rows: --data's, else the shipped sample. */
async function loadBenchTasks(suite: string | undefined, dataPath: string | null, limit: number | null): Promise<TerminalEvalData> {
  const swe = suite === SWE_BENCH_SUITE.name;
  const source = dataPath ?? shippedTerminalTasksDir(path.join('data', 'eval', swe ? 'swe_bench' : 'terminal_bench'));
  return { tasks: swe ? await loadSweBenchTasks(source, limit) : await loadTerminalBenchTasks(source, limit), source };
}

/** The tasks an eval config names: the folder's tasks sorted by name, or terminal_bench's rows in file order (or `only`'s), the first `limit`. */
export async function loadTerminalEval(cfg: { suite?: string; data_path: string | null; limit: number | null; terminal?: TerminalEvalOptions; system_prompt?: string | null }): Promise<TerminalEvalData> {
  const only = cfg.terminal?.only ?? null;
  if (cfg.suite === TAU2_BENCH_SUITE.name) return loadTau2Eval(cfg, only);
  const bench = cfg.suite === TERMINAL_BENCH_SUITE.name || cfg.suite === SWE_BENCH_SUITE.name;
  if (bench && !only) return loadBenchTasks(cfg.suite, cfg.data_path, cfg.limit);
  const folder = bench ? null : terminalDataDir(cfg.data_path, process.cwd());
  const { tasks: all, source } = folder === null ? await loadBenchTasks(cfg.suite, cfg.data_path, null) : { tasks: loadHarborTasks(folder), source: folder };
  let tasks: TerminalEvalData['tasks'] = all;
  if (only) {
    const byName = new Map(all.map((t) => [t.taskName, t]));
    tasks = only.map((name) => {
      const t = byName.get(name);
      if (!t) throw new ConfigurationError(`terminal.only: no task ${JSON.stringify(name)} in ${source} (it has ${[...byName.keys()].join(', ')})`);
      return t;
    });
  }
  return { tasks: cfg.limit === null ? tasks : tasks.slice(0, cfg.limit), source };
}
