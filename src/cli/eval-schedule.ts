// `cookbook eval <run id or log dir> --every 30m --benchmarks a,b`: a Temporal Schedule whose
// every firing evaluates the run's sampler checkpoints not evaluated yet (evalScheduleWorkflow);
// `eval --list` shows these schedules, `eval --unschedule <id>` deletes one.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ScheduleAlreadyRunning, ScheduleNotFoundError, type Client, type ScheduleSummary } from '@temporalio/client';
import { ConfigError } from '../cookbook/config/overrides.js';
import { isBenchmarkHubId } from '../cookbook/eval/benchmark-data.js';
import { resolveEval, type EvalArgs } from '../cookbook/eval/resolve-eval.js';
import { scheduledEvalDir, SCHEDULED_EVALS_DIR, type EvalScheduleInput } from '../cookbook/eval/scheduled.js';
import { EVAL_SUITE_NAMES } from '../cookbook/eval/suites/index.js';
import { RunStore } from '../cookbook/run-store.js';
import { DEFAULT_TASK_QUEUE } from '../workers/task-queue.js';

export const EVAL_SCHEDULE_WORKFLOW = 'evalScheduleWorkflow';
/** Scheduled evals of one run at once, per firing. */
export const DEFAULT_SCHEDULED_CONCURRENCY = 2;

export interface ResolvedEvalSchedule {
  scheduleId: string;
  /** The interval as given (`30m`, `2h`, …). */
  every: string;
  input: EvalScheduleInput;
  runWorkflowId: string;
}

/** `30s`, `30m`, `2h`, `1d`: the Schedule's interval. */
export function parseEvery(every: string): string {
  const m = /^(\d+)(s|m|h|d)$/.exec(every.trim());
  if (!m || Number(m[1]) === 0) throw new ConfigError(`--every: "${every}" is not an interval such as 30m, 2h or 1d (a positive number and s, m, h or d)`);
  return `${Number(m[1])}${m[2]}`;
}

export function parseBenchmarks(list: string): string[] {
  const names = list.split(',').map((b) => b.trim()).filter(Boolean);
  if (names.length === 0) throw new ConfigError('--benchmarks: give one or more suite names, comma-separated (`cookbook eval --list`)');
  const unknown = names.filter((b) => !EVAL_SUITE_NAMES.includes(b));
  if (unknown.length) throw new ConfigError(`--benchmarks: unknown suite${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (suites: ${EVAL_SUITE_NAMES.join(', ')})`);
  if (new Set(names).size !== names.length) throw new ConfigError(`--benchmarks: "${list}" names a suite twice`);
  return names;
}

/** The flags as `--set` overrides the worker can apply anywhere (the data path made absolute here). */
function flagOverrides(args: EvalArgs): string[] {
  return [
    ...(args.limit !== undefined ? [`limit=${args.limit}`] : []),
    ...(args.data !== undefined ? [`data_path=${isBenchmarkHubId(args.data) ? args.data : resolve(args.data)}`] : []),
    ...(args.samples !== undefined ? [`num_samples=${args.samples}`] : []),
    ...(args.passAtK !== undefined ? [`pass_at_k=[${args.passAtK}]`] : []),
    ...(args.noSkip ? ['skip_unsupported=false'] : []),
    ...(args.set ?? []),
  ];
}

/**
 * The schedule for a run's log dir: every benchmark's eval config is resolved once here (as a
 * checkpoint's would be), so a bad flag, override or data path fails now rather than at each firing.
 */
export function resolveEvalSchedule(logPath: string, benchmarks: string[], every: string, args: EvalArgs, opts: { scheduleId?: string; concurrency?: number } = {}): ResolvedEvalSchedule {
  const dir = resolve(logPath);
  if (!existsSync(join(dir, '.cookbook', 'run.json'))) throw new ConfigError(`${dir} is not a run's log dir (no .cookbook/run.json): give a training run's id or log dir`);
  const record = new RunStore(dir).read();
  if (record.kind === 'eval') throw new ConfigError(`${dir} is an eval run; schedule evals of a training run (its checkpoints)`);
  const set = flagOverrides(args);
  for (const b of benchmarks) {
    const probe = scheduledEvalDir(dir, '_probe', b);
    resolveEval('tinker://probe/sampler_weights/probe', b, { set: [...set, `log_path=${probe}`] }, { workflowId: 'probe' });
  }
  return {
    scheduleId: opts.scheduleId ?? `evals-${record.workflowId}`,
    every: parseEvery(every),
    runWorkflowId: record.workflowId,
    input: { logPath: dir, benchmarks, set, concurrency: opts.concurrency ?? DEFAULT_SCHEDULED_CONCURRENCY },
  };
}

export async function createEvalSchedule(client: Client, s: ResolvedEvalSchedule, taskQueue = DEFAULT_TASK_QUEUE) {
  try {
    return await client.schedule.create({
      scheduleId: s.scheduleId,
      spec: { intervals: [{ every: s.every }] },
      action: {
        type: 'startWorkflow',
        workflowType: EVAL_SCHEDULE_WORKFLOW,
        // The schedule appends each firing's time to this id.
        workflowId: s.scheduleId,
        taskQueue,
        args: [s.input],
        staticSummary: `scheduled evals of ${s.runWorkflowId}: ${s.input.benchmarks.join(', ')}`,
      },
      // A firing due while the last one still evaluates is skipped: the next one finds what is left.
      policies: { overlap: 'SKIP', catchupWindow: '1m' },
      memo: { run: s.runWorkflowId, logPath: s.input.logPath, benchmarks: s.input.benchmarks, every: s.every },
      state: { note: `cookbook eval ${s.runWorkflowId} --every ${s.every} --benchmarks ${s.input.benchmarks.join(',')}` },
    });
  } catch (err) {
    if (err instanceof ScheduleAlreadyRunning) throw new ConfigError(`schedule ${s.scheduleId} already exists: \`cookbook eval --unschedule ${s.scheduleId}\` first, or name another with --id`);
    throw err;
  }
}

export interface EvalScheduleRow {
  scheduleId: string;
  run: string;
  logPath: string;
  benchmarks: string[];
  every: string;
  paused: boolean;
  lastFiring: Date | null;
  nextFiring: Date | null;
}

const isEvalSchedule = (s: Pick<ScheduleSummary, 'action'>) => s.action?.workflowType === EVAL_SCHEDULE_WORKFLOW;

export async function listEvalSchedules(client: Client): Promise<EvalScheduleRow[]> {
  const rows: EvalScheduleRow[] = [];
  for await (const s of client.schedule.list()) {
    if (!isEvalSchedule(s)) continue;
    const memo = (s.memo ?? {}) as Partial<{ run: string; logPath: string; benchmarks: string[]; every: string }>;
    rows.push({
      scheduleId: s.scheduleId,
      run: memo.run ?? '?',
      logPath: memo.logPath ?? '?',
      benchmarks: memo.benchmarks ?? [],
      every: memo.every ?? '?',
      paused: s.state.paused,
      lastFiring: s.info.recentActions.at(-1)?.takenAt ?? null,
      nextFiring: s.info.nextActionTimes[0] ?? null,
    });
  }
  return rows.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
}

const when = (d: Date | null) => (d ? d.toISOString().replace('T', ' ').slice(0, 19) : '-');

export function formatEvalSchedules(rows: readonly EvalScheduleRow[]): string {
  if (rows.length === 0) return 'no eval schedules';
  const table = [
    ['schedule', 'every', 'benchmarks', 'last firing (UTC)', 'next firing (UTC)', 'run'],
    ...rows.map((r) => [r.scheduleId, r.every + (r.paused ? ' (paused)' : ''), r.benchmarks.join(','), when(r.lastFiring), when(r.nextFiring), `${r.run} (${join(r.logPath, SCHEDULED_EVALS_DIR)})`]),
  ];
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  return table.map((row) => row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]!))).join('  ')).join('\n');
}

/** Deletes an eval schedule (the evals it started go on; their results stay in the run's folder). */
export async function unscheduleEval(client: Client, scheduleId: string): Promise<void> {
  const handle = client.schedule.getHandle(scheduleId);
  try {
    const d = await handle.describe();
    if (!isEvalSchedule(d)) throw new ConfigError(`--unschedule: schedule ${scheduleId} is not an eval schedule (its action starts ${d.action.workflowType})`);
    await handle.delete();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) throw new ConfigError(`--unschedule: no schedule ${scheduleId} (see \`cookbook eval --list\`)`);
    throw err;
  }
}
