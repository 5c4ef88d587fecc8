// What a terminal eval reports (reference 0.6.1 recipes/harbor_rl/eval.py TaskResult and its
// files, scripts/eval_harbor_rl.py print_summary): per task its reward, reward details, turns,
// seconds, error and status; the pass rate over all tasks; asummary.txt's fixed-width lines and
// aerr.txt's error blocks.
import type { EvalResultsFile } from '../results.js';
import type { TerminalEvalOptions } from './terminal.js';

/** SKIPPED: the task could not be set up (swe_bench's repo that does not clone); it is listed, not scored. */
export type TaskStatus = 'PASS' | 'FAIL' | 'ERROR' | 'SKIPPED';

/** Thrown while setting a task up when the task cannot run here: the task is SKIPPED with this message as the reason. */
export class TaskSkippedError extends Error {
  override name = 'TaskSkippedError';
}

export interface TerminalTaskResult {
  index: number;
  /** The task's name. */
  id: string;
  status: TaskStatus;
  /** status === 'PASS' (what the eval's progress counts as correct). */
  correct: boolean;
  /** Sum of the episode's step rewards (the test's reward, or the context-overflow penalty). */
  reward: number;
  /** The last step's metrics (reward, test_passed, grading_error, …). */
  reward_details: Record<string, number>;
  turns: number;
  seconds: number;
  /** test.sh's verdict: reward, exit code and the tail of its output; null when the tests never ran. */
  test_verdict: string | null;
  error: string | null;
  /** Why the episode ended (the env's stop reason), when it ran. */
  stop_reason: string | null;
  /** The run-folder path of the task's trajectory text (the last transition, as the reference writes it). */
  trajectory: string | null;
}

/** The reference's status: ERROR if the episode raised, PASS if the reward is above 0, else FAIL. */
export const taskStatus = (r: { error: string | null; reward: number }): TaskStatus => (r.error !== null ? 'ERROR' : r.reward > 0 ? 'PASS' : 'FAIL');

export interface TerminalChunkBlob {
  format: 'eval_chunk/v1';
  /** terminal or terminal_bench. */
  suite: string;
  chunk: number;
  results: TerminalTaskResult[];
}

/** results.json of a terminal eval: the single-turn file's fields, its examples the tasks. */
export interface TerminalResultsFile extends Omit<EvalResultsFile, 'examples' | 'skipped'> {
  terminal: TerminalEvalOptions;
  /** swe_bench: the tasks that did not run (SKIPPED), with why. */
  skipped?: Array<{ id: string; reason: string }>;
  examples: TerminalTaskResult[];
}

/** score = pass_rate = passed / tasks (errors count as not passed, as print_summary's). */
export function aggregateTerminal(results: readonly TerminalTaskResult[]): Record<string, number> {
  const n = results.length;
  const count = (s: TaskStatus) => results.filter((r) => r.status === s).length;
  const passed = count('PASS');
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  return {
    score: n ? passed / n : 0,
    pass_rate: n ? passed / n : 0,
    num_pass: passed,
    num_fail: count('FAIL'),
    num_error: count('ERROR'),
    num_correct: passed,
    num_examples: n,
    mean_reward: mean(results.map((r) => r.reward)),
    mean_turns: mean(results.map((r) => r.turns)),
  };
}

/** Python's f"{x:>w.1f}" (an exact tie such as 0.25 rounds up here, to even there). */
const f1 = (x: number, w: number) => x.toFixed(1).padStart(w);

/** One asummary.txt line: f"{task_name:<40} {reward:>7.1f} {turns:>6} {time:>8.1f} {status:>7}". */
export function summaryLine(r: TerminalTaskResult): string {
  return `${r.id.padEnd(40)} ${f1(r.reward, 7)} ${String(r.turns).padStart(6)} ${f1(r.seconds, 8)} ${r.status.padStart(7)}`;
}

/** print_summary's line: "terminal: total=3 pass=1 fail=1 error=1 pass_rate=33.3%". */
export function passRateLine(suite: string, results: readonly TerminalTaskResult[]): string {
  const m = aggregateTerminal(results);
  return `${suite}: total=${m.num_examples} pass=${m.num_pass} fail=${m.num_fail} error=${m.num_error} pass_rate=${(100 * m.pass_rate).toFixed(1)}%`;
}

/** asummary.txt: one line per task, in task order (the reference appends them as tasks finish). */
export function summaryText(results: readonly TerminalTaskResult[]): string {
  return results.map((r) => `${summaryLine(r)}\n`).join('');
}

/** aerr.txt: a block per task that errored. */
export function errorsText(results: readonly TerminalTaskResult[]): string {
  const bar = '='.repeat(60);
  return results
    .filter((r) => r.error !== null)
    .map((r) => `${bar}\nTask: ${r.id}\n${bar}\n${r.error}\n\n`)
    .join('');
}

/** What results.md adds under the metrics table: the per-task lines (with a header) and the pass-rate line. */
export function terminalTable(suite: string, results: readonly TerminalTaskResult[]): string {
  const header = `${'task'.padEnd(40)} ${'reward'.padStart(7)} ${'turns'.padStart(6)} ${'time'.padStart(8)} ${'status'.padStart(7)}`;
  return ['```', header, ...results.map(summaryLine), '```', '', passRateLine(suite, results)].join('\n');
}
