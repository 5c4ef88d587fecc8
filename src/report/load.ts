// Reading a run's log dir for `cookbook report`: config, metrics, checkpoints and the run record.
// Only files are read, so a report of a finished (or copied) log dir needs no Temporal server.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { RunStore, type CheckpointRow, type FailoverRow, type RunKind, type RunRecord } from '../cookbook/run-store.js';
import { sweepPointDirs } from './sweep.js';

/** A problem the user can fix (wrong id or path, a run with nothing to show): no stack trace. */
export class ReportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReportError';
  }
}

export interface RunData {
  /** The run's name in legends and headings: its workflow id, else the log dir's name. */
  label: string;
  logDir: string;
  kind: RunKind | null;
  /** config.json as written at the start of the run (the resolved config). */
  config: Record<string, unknown> | null;
  metrics: Array<Record<string, unknown>>;
  checkpoints: CheckpointRow[];
  /** Moves of the run's training to another backend (failovers.json). */
  failovers: FailoverRow[];
}

const isRunDir = (dir: string) => ['config.json', 'metrics.jsonl', join('.cookbook', 'run.json')].some((f) => existsSync(join(dir, f)));

/** Stage dirs of a pipeline log dir (`<index>-<kind>`, pipeline.ts), in stage order. */
export function pipelineStages(dir: string): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  return readdirSync(dir)
    .map((name) => ({ name, m: /^(\d+)-(sl|rl|dpo|distill)$/.exec(name) }))
    .filter((e) => e.m && isRunDir(join(dir, e.name)))
    .sort((a, b) => Number(a.m![1]) - Number(b.m![1]))
    .map((e) => join(dir, e.name));
}

/** Fails with a clear message unless `dir` is a run's log dir. */
export function checkLogDir(dir: string): string {
  const abs = resolve(dir);
  if (!existsSync(abs)) throw new ReportError(`no log dir at ${abs}`);
  if (!statSync(abs).isDirectory()) throw new ReportError(`${abs} is not a directory (give a run's log dir or workflow id)`);
  if (!isRunDir(abs) && pipelineStages(abs).length === 0) {
    throw new ReportError(`${abs} is not a run's log dir: it has no config.json, metrics.jsonl or .cookbook/run.json`);
  }
  return abs;
}

function readJson<T>(path: string): T | null {
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, 'utf8').replace(/\bNaN\b|-?\bInfinity\b/g, 'null')) as T;
  } catch (err) {
    throw new ReportError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
}

export function loadRun(logDir: string, label?: string): RunData {
  const dir = checkLogDir(logDir);
  const store = new RunStore(dir);
  const record = readJson<RunRecord>(join(dir, '.cookbook', 'run.json'));
  let metrics: Array<Record<string, unknown>>;
  let checkpoints: CheckpointRow[];
  let failovers: FailoverRow[];
  try {
    metrics = store.readMetrics();
    checkpoints = store.readCheckpoints();
    failovers = store.readFailovers();
  } catch (err) {
    // A line cut in half by a copy in flight, or a file that was never a metrics file.
    throw new ReportError(`cannot read the metrics or checkpoints of ${dir}: ${(err as Error).message}`);
  }
  return {
    label: label ?? record?.workflowId ?? basename(dir),
    logDir: dir,
    kind: record?.kind ?? null,
    config: readJson<Record<string, unknown>>(store.configJson),
    metrics: metrics.filter((row) => typeof row.step === 'number'),
    checkpoints,
    failovers,
  };
}

/**
 * The runs a log dir stands for: itself, or for a pipeline each stage (labelled `<pipeline>/<stage>`),
 * whose metrics live in the stage dirs.
 */
export function loadRuns(logDir: string): RunData[] {
  const dir = checkLogDir(logDir);
  const top = loadRun(dir);
  if (top.kind === 'sweep' && top.config) {
    // A sweep: its points that have logged something, each under its own workflow id.
    const points = sweepPointDirs(top).map((p) => loadRun(p)).filter((p) => p.metrics.length > 0);
    return points.length > 0 ? points : [top];
  }
  const stages = pipelineStages(dir);
  // A pipeline that has not started a stage yet is reported as itself (no metrics yet).
  if (stages.length === 0 || (top.kind !== 'pipeline' && top.metrics.length > 0)) return [top];
  return stages.map((stage) => loadRun(stage, `${top.label}/${basename(stage)}`));
}

/** Every run of the report must have something to plot; says which has not, and where it looked. */
export function requireMetrics(runs: readonly RunData[]): void {
  for (const run of runs) {
    if (run.metrics.length === 0) {
      throw new ReportError(`run ${run.label} has no metrics yet: ${join(run.logDir, 'metrics.jsonl')} is missing or empty (use --serve to follow a run that just started)`);
    }
  }
}
