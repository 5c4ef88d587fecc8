// One terminal eval episode per task (reference 0.6.1 recipes/harbor_rl/eval.py evaluate_task):
// the task's env (rl/envs/terminal: its image, the bash tool, HarborReward) rolled out once by the
// policy, sampling multi-turn. Each episode's sandbox operations are recorded at the eval's
// position (chunk, example), so a chunk retried after a crash replays them and runs no command
// again; its sampling seeds come from (seed, suite, example index), so it samples the same turns.
// A failure of the episode itself (an image that does not build, a sandbox gone) is the task's
// ERROR; trouble with the sampler or the run store, or the activity's cancellation, is not the
// task's and is thrown, so the chunk is tried again.
import type { SamplingSession } from '../../../backends/types.js';
import { modelInputToInts } from '../../model-input.js';
import type { ModelChoice } from '../../renderers/for-model.js';
import { tinkerTokenCompleter } from '../../rl/completers.js';
import { TerminalArgsSchema, TerminalEnvGroupBuilder, terminalEnvOptions, type TerminalEnvOptions } from '../../rl/envs/terminal/env.js';
import { samplerRolloutContext } from '../../rl/rollout-context.js';
import { doGroupRollout, failFast, passesThrough } from '../../rl/rollouts.js';
import { sequentialSeeds } from '../../rl/seeds.js';
import type { Once } from '../../rl/side-effects.js';
import type { Trajectory } from '../../rl/types.js';
import { RunStoreDamagedError, RunStoreWriteError } from '../../run-store.js';
import type { Tokenizer } from '../../tokenizer.js';
import type { ToolDeclaringRenderer } from '../../tool-use/index.js';
import { exampleSeed } from '../benchmark-run.js';
import { TERMINAL_SUITE, type TerminalEvalOptions, type TerminalEvalTask } from './terminal.js';
import { isTerminalBenchTask } from './terminal-bench.js';
import { TerminalBenchEnvGroupBuilder } from './terminal-bench-env.js';
import { isSweBenchTask } from './swe-bench.js';
import { SweBenchEnvGroupBuilder } from './swe-bench-env.js';
import { TaskSkippedError, taskStatus, type TerminalTaskResult } from './terminal-results.js';

/**
 * The env's options from the suite's, through the RL env's own args (so whatever the env adds
 * keeps its default there); the reference eval's env has no trajectory limit.
 */
export function terminalEnvOptionsOf(o: TerminalEvalOptions): TerminalEnvOptions {
  const args = TerminalArgsSchema.parse({
    tasks: '.',
    batch_size: 1,
    group_size: 1,
    max_turns: o.max_turns,
    sandbox_timeout: o.sandbox_timeout,
    command_timeout: o.command_timeout,
    grader_timeout: o.grader_timeout,
    storage_mb: o.storage_mb,
    memory_mb: o.memory_mb,
    max_processes: o.max_processes,
    sandbox_backend: o.sandbox_backend,
  });
  return { ...terminalEnvOptions(args), maxTrajectoryTokens: o.max_trajectory_tokens };
}

/** Side samplers (none in this env today) are seeded apart from the policy. */
const SIDE_SAMPLERS = 1_000_001;

export interface TerminalEpisodeSetup {
  /** The policy's session. */
  session: SamplingSession;
  /** Sessions on other models, for side samplers. */
  openSession(source: { modelPath: string } | { baseModel: string }): Promise<SamplingSession>;
  policyModel: ModelChoice;
  /** The policy's renderer (it declares the bash tool in the system prompt). */
  renderer: ToolDeclaringRenderer;
  tokenizer: Pick<Tokenizer, 'decode'>;
  sampling: { seed: number; max_tokens: number; temperature: number };
  terminal: TerminalEvalOptions;
  /** The eval's system_prompt (swe_bench takes it over its own, as the reference's `system_prompt or _SYSTEM_PROMPT`). */
  systemPrompt?: string | null;
  /** The suite's name, part of each example's sampling seed (default: terminal). */
  suite?: string;
  /** The record of example `index`'s sandbox operations. */
  onceFor(index: number): Once;
  /** Keeps a task's trajectory text; returns where it went (a run-folder path). */
  writeTrajectory(task: string, text: string): string;
}

/** Python's repr of a float as format_trajectory prints rewards and metrics (1 → 1.0). */
const pyFloat = (v: number) => (Number.isInteger(v) ? v.toFixed(1) : String(v));

/** The reference's format_trajectory(..., only_last_transition=True), without the colours. */
export function formatLastTransition(traj: Trajectory, tokenizer: Pick<Tokenizer, 'decode'>): string {
  const lines = ['='.repeat(60)];
  const i = traj.transitions.length - 1;
  const t = traj.transitions[i];
  if (t) {
    const metrics = Object.entries(t.metrics).map(([k, v]) => `'${k}': ${pyFloat(v)}`);
    lines.push(
      `------ Transition ${i} ------`,
      `Observation:: ${tokenizer.decode(modelInputToInts(t.ob))}`,
      `Action:: ${tokenizer.decode(t.ac.tokens)}`,
      `Reward:: ${pyFloat(t.reward)}`,
      `Episode done:: ${t.episodeDone ? 'True' : 'False'}`,
      `Metrics:: {${metrics.join(', ')}}`,
      '-'.repeat(60),
    );
  }
  lines.push('='.repeat(60));
  return `${lines.join('\n')}\n`;
}

/** The task's env: a Harbor task's (rl/envs/terminal), or a Terminal-Bench row's in the generic image. */
function envBuilder(task: TerminalEvalTask, s: TerminalEpisodeSetup) {
  const opts = terminalEnvOptionsOf(s.terminal);
  if (isSweBenchTask(task)) return new SweBenchEnvGroupBuilder(task, s.renderer, opts, s.terminal.repos_dir, s.systemPrompt ?? null);
  return isTerminalBenchTask(task) ? new TerminalBenchEnvGroupBuilder(task, s.renderer, opts) : new TerminalEnvGroupBuilder(task, s.renderer, 1, opts);
}

/** One episode of `task` (example `index`), graded; never throws for the task's own failures. */
export async function evaluateTerminalTask(index: number, task: TerminalEvalTask, s: TerminalEpisodeSetup): Promise<TerminalTaskResult> {
  const start = performance.now();
  const seed = exampleSeed(s.sampling.seed, s.suite ?? TERMINAL_SUITE.name, index);
  const ctx = samplerRolloutContext({
    openSession: s.openSession,
    policyModel: s.policyModel,
    seeds: (...parts) => sequentialSeeds(seed, SIDE_SAMPLERS, ...parts),
    once: s.onceFor(index),
  });
  const policy = tinkerTokenCompleter(s.session, { maxTokens: s.sampling.max_tokens, temperature: s.sampling.temperature, seedFor: sequentialSeeds(seed) });
  const seconds = () => Math.round((performance.now() - start) / 100) / 10;
  const base = { index, id: task.taskName };
  try {
    const builder = envBuilder(task, s).withContext(ctx);
    const group = await doGroupRollout(builder, policy, failFast());
    const traj = group.trajectoriesG[0]!;
    const last = traj.transitions.at(-1);
    const reward = traj.transitions.reduce((sum, t) => sum + t.reward, 0);
    const verdict = last?.logs.test_verdict;
    return {
      ...base,
      status: taskStatus({ error: null, reward }),
      correct: reward > 0,
      reward,
      reward_details: last ? { ...last.metrics } : {},
      turns: traj.transitions.length,
      seconds: seconds(),
      test_verdict: verdict === undefined ? null : String(verdict),
      error: null,
      stop_reason: traj.stopReason === null ? null : String(traj.stopReason),
      trajectory: s.writeTrajectory(task.taskName, formatLastTransition(traj, s.tokenizer)),
    };
  } catch (e) {
    // The run store failing to keep a record is the worker's trouble, not the task's.
    if (passesThrough(e) || e instanceof RunStoreWriteError || e instanceof RunStoreDamagedError) throw e;
    return {
      ...base,
      status: e instanceof TaskSkippedError ? 'SKIPPED' : 'ERROR',
      correct: false,
      reward: 0,
      reward_details: {},
      turns: 0,
      seconds: seconds(),
      test_verdict: null,
      error: e instanceof Error ? e.message : String(e),
      stop_reason: null,
      trajectory: null,
    };
  }
}
