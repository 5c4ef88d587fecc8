// `cookbook eval <model or checkpoint> <suite> [--limit N] [--data PATH] [--set key=value …]`:
// resolve and check the eval config and its data, start the eval workflow, print progress lines
// and the results table; results.json and results.md land in the eval run's folder.
import type { Client } from '@temporalio/client';
import { loadBenchmark } from '../cookbook/eval/benchmark-data.js';
import { partialScoreNote } from '../cookbook/eval/results.js';
import { AGENTIC_SUITES, EVAL_SUITE_NAMES, SUITES } from '../cookbook/eval/suites/index.js';
import { isAgenticSuite, loadTerminalEval } from '../cookbook/eval/suites/terminal.js';
import { ConfigError } from '../cookbook/config/overrides.js';
import { resolveEval, type EvalArgs, type ResolvedEval } from '../cookbook/eval/resolve-eval.js';
import { DEFAULT_TASK_QUEUE } from '../workers/task-queue.js';
import { checkBackend } from './train.js';
import type { EvalWorkflowResult } from '../workflows/eval.js';
import type { Progress } from '../workflows/shared/messages.js';
import { followRun } from './follow.js';
import { evalFailure, startEvalWorkflow } from './eval-start.js';
import { checkRunStore } from '../cookbook/stores/run-location.js';

export { resolveEval, type EvalArgs, type ResolvedEval };

export const EVAL_USAGE = `  eval <model or checkpoint> <suite>    evaluate a base model or a tinker:// checkpoint on a benchmark
        [--limit N] [--data PATH]           (suites: ${EVAL_SUITE_NAMES.join(', ')}); --data: the full set in its
        [--set key=value …] [--detach]      public layout (default: the shipped sample); results.json in the run folder
        [--samples N] [--pass-at-k 1,5]     N samples per example, pass@k for each k ≤ N (default 1, 5, …, N)
        [--set max_attempts=N]              tries of each eval activity before the eval fails (default 10)
        [--no-skip]                         refuse rows this port cannot check (default: skip them, listed in results)
  eval <model or checkpoint> --benchmarks a,b,c   one eval per benchmark, then a summary table of them all
  eval <run id or log dir> --every 30m --benchmarks a,b   a schedule: each firing evaluates the run's sampler
        [--id <schedule id>]                checkpoints not evaluated yet (<log dir>/evals/<checkpoint>/<benchmark>)
  eval <model or checkpoint> --inspect <task>   an Inspect AI task (a registered name, or path/task.py@name)
        [--limit N] [--set key=value …]     through Inspect's own runner, resumable; results.json + Inspect's log
  eval --list                         the benchmark suites and the eval schedules
  eval --unschedule <schedule id>     delete an eval schedule`;

/** Loads the data as the workflow will, so a bad row fails here (naming file and line) before any run exists. */
export async function checkEvalData(r: ResolvedEval): Promise<number> {
  return (await evalDataCounts(r)).count;
}

/** What checkEvalData checks, with how many rows will be skipped as ones this port cannot check. */
async function evalDataCounts(r: ResolvedEval): Promise<{ count: number; skipped: number }> {
  await checkRunStore(r.run.logPath);
  try {
    if (isAgenticSuite(r.config.suite)) return { count: (await loadTerminalEval(r.config)).tasks.length, skipped: 0 };
    const { items, skipped } = await loadBenchmark(r.config);
    return { count: items.length, skipped: skipped.length };
  } catch (err) {
    throw new ConfigError(`${r.config.suite} data: ${(err as Error).message}`);
  }
}

/** "12 examples", and the rows that will be skipped, for the `started …` line. */
export const startedCountText = (suite: string, c: { count: number; skipped: number }) =>
  `${c.count} ${isAgenticSuite(suite) ? 'tasks' : 'examples'}${c.skipped ? ` (${c.skipped} more rows skipped: this port cannot check them; the score will not be comparable with a published full-set score)` : ''}`;

export function startEval(client: Client, r: ResolvedEval, taskQueue = DEFAULT_TASK_QUEUE) {
  return startEvalWorkflow(client, 'evalWorkflow', r, r.config.suite, taskQueue);
}

export function evalProgressLine(suite: string, p: Progress): string {
  if (p.status === 'starting') return `${suite}: starting (loading the data, resolving the model)`;
  const m = p.lastMetrics;
  const done = m.examples_done ?? 0;
  const correct = m.num_correct ?? 0;
  const [items, right, rate] = isAgenticSuite(suite) ? ['tasks', 'passed', 'pass rate'] : ['examples', 'correct', 'accuracy'];
  const acc = done > 0 ? ` · ${rate} so far ${(correct / done).toFixed(4)}` : '';
  return `${suite}: ${done}/${m.num_examples ?? '?'} ${items} (chunk ${p.step}/${p.totalSteps}) · ${correct} ${right}${acc} · ${p.status}`;
}

/** Polls the eval's progress until it ends, printing one plain line per change (and followRun's notes). */
export async function watchEval(client: Client, { workflowId, config }: ResolvedEval, print: (line: string) => void = console.log, pollMs = 1000): Promise<EvalWorkflowResult> {
  let last = '';
  return followRun<EvalWorkflowResult>(client, client.workflow.getHandle(workflowId), {
    onProgress: (p) => {
      const line = evalProgressLine(config.suite, p);
      if (line !== last) print(line);
      last = line;
    },
    note: print,
    pollMs,
  }).catch((err: unknown) => {
    throw evalFailure(workflowId, err, config.max_attempts);
  });
}

export function formatSuites(): string {
  const w = Math.max(...EVAL_SUITE_NAMES.map((n) => n.length));
  return [
    ...Object.values(SUITES).map((s) => `${s.name.padEnd(w)}  ${s.description}\n${' '.repeat(w)}  data: ${s.dataset.hubId}${s.dataset.name ? ` (config ${s.dataset.name})` : ''}${s.dataset.configs ? ` (a config per subject, ${s.dataset.configs.length})` : ''}, split ${s.dataset.split}`),
    ...Object.values(AGENTIC_SUITES).map((s) => `${s.name.padEnd(w)}  ${s.description}\n${' '.repeat(w)}  data: ${s.data}`),
  ].join('\n');
}

export interface EvalCommandOptions extends EvalArgs {
  list?: boolean;
  detach?: boolean;
  workflowId?: string;
  benchmarks?: string;
  /** An Inspect AI task: the eval runs it through Inspect instead of a suite. */
  inspect?: string;
  every?: string;
  unschedule?: string;
  engineUrl: string;
  taskQueue?: string;
  connect: () => Promise<Client>;
  /** Where eval run folders go (default ./runs). */
  runsDir?: string;
  /** A workflow id's log dir (asks Temporal). */
  logDirOf?: (client: Client, id: string) => Promise<string>;
}

const USAGE_LINE = 'eval: usage `cookbook eval <model or checkpoint> <suite>` or `cookbook eval <model or checkpoint> --benchmarks a,b` [--limit N] [--data PATH] [--set key=value …] (suites: `cookbook eval --list`)';

/** The `eval` command: 0 when the results are printed (or the run started with --detach). */
export async function evalCommand(rest: string[], o: EvalCommandOptions): Promise<number> {
  const schedules = await import('./eval-schedule.js');
  if (o.list) {
    console.log(formatSuites());
    let listed: string;
    try {
      listed = schedules.formatEvalSchedules(await schedules.listEvalSchedules(await o.connect()));
    } catch (err) {
      listed = `(eval schedules not listed: ${(err as Error).message})`;
    }
    console.log(`\neval schedules\n${listed}`);
    return 0;
  }
  if (o.unschedule !== undefined) {
    await schedules.unscheduleEval(await o.connect(), o.unschedule);
    console.log(`deleted schedule ${o.unschedule} (evals it started go on; their results stay in the run's evals/ folder)`);
    return 0;
  }
  const [target, suite] = rest;
  if (!target) throw new ConfigError(USAGE_LINE);
  if (o.inspect !== undefined) {
    if (suite || o.benchmarks !== undefined || o.every !== undefined) throw new ConfigError('eval --inspect: give the model and the Inspect task only (no suite, --benchmarks or --every)');
    return (await import('./eval-inspect.js')).inspectEvalCommand(target, o.inspect, o);
  }
  if (suite && o.benchmarks !== undefined) throw new ConfigError(`eval: give the suite as "${suite}" or as --benchmarks, not both`);
  const benchmarks = o.benchmarks !== undefined ? schedules.parseBenchmarks(o.benchmarks) : suite ? [suite] : [];
  if (benchmarks.length === 0) throw new ConfigError(USAGE_LINE);
  if (o.every !== undefined) return scheduleCommand(target, benchmarks, o);
  if (benchmarks.length === 1 && o.benchmarks === undefined) return singleEval(target, benchmarks[0]!, o);
  return multiEval(target, benchmarks, o);
}

async function singleEval(model: string, suite: string, o: EvalCommandOptions): Promise<number> {
  const resolved = resolveEval(model, suite, o, { workflowId: o.workflowId, runsDir: o.runsDir });
  const n = await evalDataCounts(resolved);
  if (!resolved.config.model.startsWith('tinker://')) await checkBackend(resolved.config.base_url ?? o.engineUrl, resolved.config.model);
  const client = await o.connect();
  await startEval(client, resolved, o.taskQueue);
  console.log(`started ${resolved.workflowId}: ${resolved.config.suite} on ${resolved.config.model}, ${startedCountText(resolved.config.suite, n)}`);
  console.log(`log dir  ${resolved.run.logPath}`);
  if (o.detach) return 0;
  const result = await watchEval(client, resolved);
  console.log(`\n${result.table}\n\nresults  ${result.resultsPath}`);
  return 0;
}

export interface BenchmarkSummary {
  suite: string;
  metrics: Record<string, number>;
  resultsPath: string;
}

/**
 * One line per benchmark: its score, how many of how many, and where its results.json is. With rows
 * skipped anywhere, a `skipped` column, and each partial score starred with a note under the table.
 */
export function benchmarkSummaryTable(model: string, rows: readonly BenchmarkSummary[]): string {
  const anySkipped = rows.some((r) => (r.metrics.num_skipped ?? 0) > 0);
  const skippedCell = (r: BenchmarkSummary) => (anySkipped ? [String(r.metrics.num_skipped ?? 0)] : []);
  const cells = [
    ['benchmark', 'score', '± stderr', 'correct', 'examples', ...(anySkipped ? ['skipped'] : []), 'results'],
    ...rows.map((r) => [
      r.suite,
      `${(r.metrics.score ?? NaN).toFixed(4)}${anySkipped ? ((r.metrics.num_skipped ?? 0) > 0 ? '*' : ' ') : ''}`,
      r.metrics.score_stderr === undefined ? '–' : r.metrics.score_stderr.toFixed(4),
      String(r.metrics.num_correct ?? '?'),
      String(r.metrics.num_examples ?? '?'),
      ...skippedCell(r),
      r.resultsPath,
    ]),
  ];
  const numeric = (c: number) => c >= 1 && c <= (anySkipped ? 5 : 4);
  const widths = cells[0]!.map((_, c) => Math.max(...cells.map((row) => row[c]!.length)));
  const line = (row: string[]) => `| ${row.map((cell, c) => (numeric(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join(' | ')} |`;
  const rule = `| ${widths.map((w, c) => (numeric(c) ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  const notes = rows.flatMap((r) => {
    const note = partialScoreNote(r.metrics);
    return note ? [`* ${r.suite}: ${note}`] : [];
  });
  return [`model ${model}`, '', line(cells[0]!), rule, ...cells.slice(1).map(line), ...(notes.length ? ['', ...notes] : [])].join('\n');
}

/**
 * `--benchmarks a,b,c`: one eval run (its own folder, results.json and workflow) per benchmark, all
 * resolved and checked before any starts, run side by side, then one summary table.
 */
async function multiEval(model: string, benchmarks: string[], o: EvalCommandOptions): Promise<number> {
  const resolved = benchmarks.map((b) => resolveEval(model, b, o, { workflowId: o.workflowId ? `${o.workflowId}-${b}` : undefined, runsDir: o.runsDir }));
  const counts = [];
  for (const r of resolved) counts.push(await evalDataCounts(r));
  if (!resolved[0]!.config.model.startsWith('tinker://')) await checkBackend(resolved[0]!.config.base_url ?? o.engineUrl, resolved[0]!.config.model);
  const client = await o.connect();
  for (const [i, r] of resolved.entries()) {
    await startEval(client, r, o.taskQueue);
    console.log(`started ${r.workflowId}: ${r.config.suite} on ${r.config.model}, ${startedCountText(r.config.suite, counts[i]!)} · log dir ${r.run.logPath}`);
  }
  if (o.detach) return 0;
  const results = await Promise.all(resolved.map((r) => watchEval(client, r)));
  console.log(`\n${benchmarkSummaryTable(resolved[0]!.config.model, results.map((res, i) => ({ suite: resolved[i]!.config.suite, metrics: res.metrics, resultsPath: res.resultsPath })))}`);
  return 0;
}

async function scheduleCommand(target: string, benchmarks: string[], o: EvalCommandOptions): Promise<number> {
  const [{ parentLogDir }, schedules] = await Promise.all([import('./continue.js'), import('./eval-schedule.js')]);
  schedules.parseEvery(o.every!); // a bad interval fails before anything is asked of Temporal
  const client = await o.connect();
  const logPath = await parentLogDir(target, async (id) => {
    if (!o.logDirOf) throw new ConfigError(`${target}: no such log dir`);
    return o.logDirOf(client, id);
  });
  const s = schedules.resolveEvalSchedule(logPath, benchmarks, o.every!, o, { scheduleId: o.workflowId });
  await schedules.createEvalSchedule(client, s, o.taskQueue);
  console.log(`created schedule ${s.scheduleId}: every ${s.every}, ${benchmarks.join(', ')} on each sampler checkpoint of ${s.runWorkflowId} not evaluated yet`);
  console.log(`results  ${logPath}/evals/<checkpoint>/<benchmark>/results.json (curves: \`cookbook report ${s.runWorkflowId}\`)`);
  console.log(`now      \`temporal schedule trigger --schedule-id ${s.scheduleId}\` fires it at once; \`cookbook eval --unschedule ${s.scheduleId}\` deletes it`);
  return 0;
}
