// The run directory (the reference's `log_path`): config.json, metrics.jsonl, checkpoints.jsonl,
// timing_spans.jsonl, logs.log, plus `.cookbook/` for the machine-readable run record and
// claim-check blobs.
//
// Every write here is idempotent, because activities run at least once and a run recovered from a
// checkpoint replays steps: a metrics row replaces any row of the same or a later step, a
// checkpoint row replaces the row of the same name, and files are written through a temp file,
// fsync and a rename (lines: appended and fsynced, then committed by a record) so a crash or a
// full disk never leaves half a line or half a file that a reader would take for data.
//
// Damage is detected (run-store-integrity.ts): what every file was written as is recorded under
// `.cookbook/sums/`, and a truncated, bit-flipped or edited file is refused with a
// RunStoreDamagedError naming the file (and line). A write the filesystem refuses (a full disk)
// fails with a RunStoreWriteError naming ENOSPC and leaves the files as they were.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pyJsonDumps } from './pyjson.js';
import { isIntMetricKey } from './metric-types.js';
import type { TimingRow } from './timing.js';
import { runDir } from './stores/mirror.js';
import { CheckedFile, CheckedJsonl, parseJsonLine, RunStoreDamagedError, RunStoreWriteError, sumsPath, writeFileAtomic } from './run-store-integrity.js';

export { RunStoreDamagedError, RunStoreWriteError, writeFileAtomic };

export type RunKind = 'sl' | 'rl' | 'dpo' | 'decisions' | 'distill' | 'distill_off_policy' | 'prompt_distill' | 'sdft' | 'pipeline' | 'sweep' | 'eval' | 'tts';

/** What workflows pass around instead of data: the run's identity and where its files live. */
export interface RunRef {
  workflowId: string;
  kind: RunKind;
  logPath: string;
  /** The training backend the run moved to on a failover (its config's `failover`); absent: `base_url`. */
  trainingBaseUrl?: string;
}

/** failovers.json: where the run moved its training, from which checkpoint, and why. */
export interface FailoverRow {
  step: number;
  from: string | null;
  to: string;
  checkpoint: string | null;
  reason: string;
}

export interface RunRecord<C = unknown> {
  workflowId: string;
  kind: RunKind;
  config: C;
}

/** A row of checkpoints.jsonl, keys in the reference's order (`CheckpointRecord.to_dict`). */
export interface CheckpointRow {
  name: string;
  batch?: number;
  epoch?: number;
  final?: boolean;
  state_path?: string;
  sampler_path?: string;
  [extra: string]: unknown;
}

export type MetricsRow = Record<string, number | string | boolean | null>;

/**
 * What one training iteration of RL or distillation trained on, for people (`cookbook report`):
 * the trajectory groups by their claim-check blob (tokens, rewards and metrics stay in the blob,
 * written once by the rollout activity) plus what only the train step knows: which groups it kept
 * and each trajectory's advantage.
 */
export interface RolloutRecord {
  format: 'rollout_record/v1';
  step: number;
  split: 'train';
  groups: Array<{
    /** Blob of the serialized TrajectoryGroup (`readBlob(ref)`). */
    ref: string;
    /** Dataset batch and group index the env builder came from. */
    batch: number;
    group: number;
    /** The step whose weights sampled the group (older than `step` in async RL). */
    sampling_step: number | null;
    tags: string[];
    /** One advantage per trajectory; null when the group was dropped before training (constant reward). */
    advantages: number[] | null;
  }>;
}

/** Beside the `rollouts/` blobs rather than in them: tests count the blobs of a batch directory. */
const ROLLOUT_RECORDS_DIR = 'rollout_records';
const TIMING_FLOAT_KEYS = new Set(['duration', 'wall_start', 'wall_end', 'wall_origin']);
const KNOWN_CHECKPOINT_KEYS = ['name', 'batch', 'epoch', 'final', 'state_path', 'sampler_path'];

export class RunDirInUseError extends Error {
  constructor(logPath: string, owner: string) {
    super(`log_path ${logPath} already holds run ${owner}; choose another log_path (nothing was changed)`);
    this.name = 'RunDirInUseError';
  }
}

/** The rows of a JSONL file with their line numbers (blank lines, which no writer here makes, skipped). */
function jsonRows(file: CheckedJsonl): Array<{ line: number; text: string; row: Record<string, unknown> }> {
  return file
    .readLines()
    .map((text, i) => ({ line: i + 1, text }))
    .filter((l) => l.text.trim() !== '')
    .map((l) => ({ ...l, row: parseJsonLine(file.file, l.line, l.text) as Record<string, unknown> }));
}

const stepOf = (row: Record<string, unknown>) => (typeof row.step === 'number' ? row.step : -1);

/** Appends the line of `step`, or replaces the rows of this step and later ones with it. */
function writeStepLine(file: CheckedJsonl, step: number, line: string): void {
  file.settle();
  const tail = file.lastLine();
  const tailStep = tail === undefined || tail.trim() === '' ? -1 : stepOf(parseJsonLine(file.file, undefined, tail) as Record<string, unknown>);
  if (tailStep < step) {
    file.append(line);
    return;
  }
  const kept = jsonRows(file).filter((r) => stepOf(r.row) < step);
  file.rewrite([...kept.map((r) => r.text), line]);
}

/** Drops the rows of `fromStep` and later. */
function truncateStepLines(file: CheckedJsonl, fromStep: number): void {
  if (!existsSync(file.file)) return;
  const rows = jsonRows(file);
  const kept = rows.filter((r) => stepOf(r.row) < fromStep);
  if (kept.length !== rows.length) file.rewrite(kept.map((r) => r.text));
}

/** Told of every metrics row and rollout record written (a worker's Prometheus counters, workers/prometheus.ts). */
export interface RunStoreObserver {
  metricsRow?(row: MetricsRow & { step: number }): void;
  rolloutRecord?(record: RolloutRecord): void;
}

let observer: RunStoreObserver | undefined;

/** Sets (or, with undefined, removes) the process's run store observer; none by default. */
export function observeRunStore(o: RunStoreObserver | undefined): void {
  observer = o;
}

export class RunStore {
  readonly configJson: string;
  readonly metricsJsonl: string;
  readonly checkpointsJsonl: string;
  readonly timingSpansJsonl: string;
  readonly logFile: string;
  private readonly recordFile: string;
  private readonly metrics: CheckedJsonl;
  private readonly checkpoints: CheckedJsonl;
  private readonly timingSpans: CheckedJsonl;

  /** The local folder the files live in: the run's log_path, or this process's mirror of a run in an object store. */
  readonly logPath: string;

  constructor(
    /** The run's log_path as configured: a folder, or an `s3://` URI (stores/mirror.ts). */
    readonly uri: string,
  ) {
    const logPath = runDir(uri);
    this.logPath = logPath;
    this.configJson = join(logPath, 'config.json');
    this.metricsJsonl = join(logPath, 'metrics.jsonl');
    this.checkpointsJsonl = join(logPath, 'checkpoints.jsonl');
    this.timingSpansJsonl = join(logPath, 'timing_spans.jsonl');
    this.logFile = join(logPath, 'logs.log');
    this.recordFile = join(logPath, '.cookbook', 'run.json');
    this.metrics = new CheckedJsonl(logPath, this.metricsJsonl);
    this.checkpoints = new CheckedJsonl(logPath, this.checkpointsJsonl);
    this.timingSpans = new CheckedJsonl(logPath, this.timingSpansJsonl);
  }

  private checked(path: string): CheckedFile {
    return new CheckedFile(this.logPath, path);
  }

  /** Claims the directory for a workflow and writes config.json; a retry of the same run is a no-op. */
  init<C>(record: RunRecord<C>, floatConfigKeys: ReadonlySet<string>): void {
    if (existsSync(this.recordFile)) {
      const owner = this.read().workflowId;
      if (owner !== record.workflowId) throw new RunDirInUseError(this.logPath, owner);
      return;
    }
    try {
      mkdirSync(this.logPath, { recursive: true });
    } catch (err) {
      throw (err as NodeJS.ErrnoException).code ? new RunStoreWriteError(this.logPath, (err as NodeJS.ErrnoException).code!, err) : err;
    }
    this.checked(this.configJson).write(pyJsonDumps(record.config, { indent: 2, floatKeys: floatConfigKeys }));
    // Written last: its presence means the directory is fully initialised.
    this.checked(this.recordFile).write(JSON.stringify(record, null, 2));
  }

  read<C>(): RunRecord<C> {
    if (!existsSync(this.recordFile)) throw new Error(`${this.logPath} is not an initialised run directory`);
    const text = this.checked(this.recordFile).read().toString('utf8');
    try {
      return JSON.parse(text) as RunRecord<C>;
    } catch (err) {
      throw new RunStoreDamagedError(this.recordFile, undefined, `not valid JSON (${(err as Error).message})`);
    }
  }

  /** config.json as written by init (checked against its record), or undefined before init. */
  readConfig(): Record<string, unknown> | undefined {
    if (!existsSync(this.configJson)) return undefined;
    const text = this.checked(this.configJson).read().toString('utf8');
    return parseJsonLine(this.configJson, undefined, text) as Record<string, unknown>;
  }

  /**
   * Writes the row for `row.step`. Rows of this step or later ones (left by an attempt that was
   * rolled back to a checkpoint) are replaced, so the file always reads as one clean history.
   */
  writeMetrics(row: MetricsRow & { step: number }): void {
    writeStepLine(this.metrics, row.step, pyJsonDumps(row, { floatKeys: (k) => !isIntMetricKey(k) }));
    observer?.metricsRow?.(row);
  }

  /** Drops rows of `fromStep` and later: their updates were undone by a restore from a checkpoint. */
  truncateMetrics(fromStep: number): void {
    truncateStepLines(this.metrics, fromStep);
  }

  readMetrics(): Array<Record<string, unknown>> {
    return jsonRows(this.metrics).map((r) => r.row);
  }

  /** A step's `timing_spans.jsonl` row, replacing any row of the same or a later step (as metrics rows). */
  writeTimingSpans(row: TimingRow): void {
    // As the reference's json.dumps: durations and wall times are floats (`0.0`), the step an int.
    writeStepLine(this.timingSpans, row.step, pyJsonDumps(row, { floatKeys: TIMING_FLOAT_KEYS }));
  }

  /** Drops timing rows of `fromStep` and later, with the metrics rows they belong to. */
  truncateTimingSpans(fromStep: number): void {
    truncateStepLines(this.timingSpans, fromStep);
  }

  readTimingSpans(): TimingRow[] {
    return jsonRows(this.timingSpans).map((r) => r.row as unknown as TimingRow);
  }

  /** Appends a checkpoint row, or replaces the row with the same name. */
  writeCheckpoint(row: CheckpointRow): void {
    const ordered: Record<string, unknown> = {};
    for (const key of KNOWN_CHECKPOINT_KEYS) if (row[key] !== undefined && row[key] !== null) ordered[key] = row[key];
    for (const [key, value] of Object.entries(row)) if (!KNOWN_CHECKPOINT_KEYS.includes(key)) ordered[key] = value;
    // Every number of a checkpoint row is an int, as in the reference's (its loop_state: batch,
    // epoch, elapsed_tokens, token counts) and in what rows here add (next_step, lora_rank,
    // resume_state's counts), nested ones included: no key makes an integral value a float.
    const line = pyJsonDumps(ordered);
    const rows = jsonRows(this.checkpoints);
    const sameName = rows.findIndex((r) => r.row.name === row.name);
    if (sameName === -1) {
      this.checkpoints.append(line);
      return;
    }
    if (rows[sameName].text === line) return;
    const lines = rows.map((r) => r.text);
    lines[sameName] = line;
    this.checkpoints.rewrite(lines);
  }

  readCheckpoints(): CheckpointRow[] {
    return jsonRows(this.checkpoints).map((r) => r.row as CheckpointRow);
  }

  /** The run's moves to other training backends, all of them (rewritten whole: a retried write is the same file). */
  writeFailovers(failovers: readonly FailoverRow[]): void {
    this.checked(join(this.logPath, 'failovers.json')).write(JSON.stringify(failovers, null, 2));
  }

  readFailovers(): FailoverRow[] {
    const file = join(this.logPath, 'failovers.json');
    if (!existsSync(file)) return [];
    return parseJsonLine(file, undefined, this.checked(file).read().toString('utf8')) as FailoverRow[];
  }

  /** A per-iteration file of the reference's layout: `iteration_{step:06d}/<name>`. */
  writeIterationFile(step: number, name: string, text: string): void {
    this.checked(join(this.logPath, `iteration_${String(step).padStart(6, '0')}`, name)).write(text);
  }

  /** The iteration's rollout record; a retried train step rewrites the same file. */
  writeRolloutRecord(record: RolloutRecord): void {
    this.checked(join(this.logPath, '.cookbook', 'store', ROLLOUT_RECORDS_DIR, `iteration_${String(record.step).padStart(6, '0')}.json`)).write(JSON.stringify(record));
    observer?.rolloutRecord?.(record);
  }

  /** Every rollout record of the run, by step. */
  readRolloutRecords(): RolloutRecord[] {
    const dir = join(this.logPath, '.cookbook', 'store', ROLLOUT_RECORDS_DIR);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((f) => /^iteration_\d+\.json$/.test(f))
      .sort()
      .map((f) => parseJsonLine(join(dir, f), undefined, this.checked(join(dir, f)).read().toString('utf8')) as RolloutRecord)
      .filter((r) => r.format === 'rollout_record/v1');
  }

  /** Claim-check storage: immutable, step-named blobs that workflows reference by relative path. */
  writeBlob(relPath: string, data: string | Uint8Array): string {
    this.checked(join(this.logPath, '.cookbook', 'store', relPath)).write(data);
    return relPath;
  }

  /**
   * A blob the run can compute again (a cache): renamed into place without fsync or a checksum
   * record, so it costs a file write, not four fsyncs. The reader must check what it reads (a torn
   * one after a machine crash) and compute it again when it does not hold.
   */
  writeCacheBlob(relPath: string, data: string): string {
    const file = join(this.logPath, '.cookbook', 'store', relPath);
    // A record from a checked write of this path (an older version) would refuse the new bytes.
    rmSync(sumsPath(this.logPath, file, '.sha256'), { force: true });
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    writeFileSync(tmp, data);
    renameSync(tmp, file);
    return relPath;
  }

  /** Whether a blob was written (a side effect's record, say). */
  hasBlob(relPath: string): boolean {
    return existsSync(join(this.logPath, '.cookbook', 'store', relPath));
  }

  /** A blob's bytes, checked against the checksum recorded when it was written. */
  readBlob(relPath: string): Buffer {
    return this.checked(join(this.logPath, '.cookbook', 'store', relPath)).read();
  }
}
