// The run directory (the reference's `log_path`): config.json, metrics.jsonl, checkpoints.jsonl,
// logs.log, plus `.cookbook/` for the machine-readable run record and claim-check blobs.
//
// Every write here is idempotent, because activities run at least once and a run recovered from a
// checkpoint replays steps: a metrics row replaces any row of the same or a later step, a
// checkpoint row replaces the row of the same name, and files are written through a temp file
// and a rename so a crash never leaves half a line or half a file.
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync, openSync, readSync, closeSync, statSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pyJsonDumps } from './pyjson.js';

export type RunKind = 'sl' | 'rl' | 'dpo' | 'distill' | 'pipeline';

/** What workflows pass around instead of data: the run's identity and where its files live. */
export interface RunRef {
  workflowId: string;
  kind: RunKind;
  logPath: string;
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

const INT_METRIC_KEYS = new Set(['step', 'epoch', 'batch', 'num_sequences', 'num_tokens']);
const INT_CHECKPOINT_KEYS = new Set(['batch', 'epoch', 'step', 'elapsed_tokens']);
/** Beside the `rollouts/` blobs rather than in them: tests count the blobs of a batch directory. */
const ROLLOUT_RECORDS_DIR = 'rollout_records';
const KNOWN_CHECKPOINT_KEYS = ['name', 'batch', 'epoch', 'final', 'state_path', 'sampler_path'];

export class RunDirInUseError extends Error {
  constructor(logPath: string, owner: string) {
    super(`log_path ${logPath} already holds run ${owner}; choose another log_path (nothing was changed)`);
    this.name = 'RunDirInUseError';
  }
}

export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

function readJsonl(path: string): unknown[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line.replace(/\bNaN\b/g, 'null').replace(/-?\bInfinity\b/g, 'null')));
}

/** The last complete line of a file, read from its tail (metrics files grow with every step). */
function lastLine(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const size = statSync(path).size;
  if (size === 0) return undefined;
  const len = Math.min(size, 1 << 16);
  const buf = Buffer.alloc(len);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buf, 0, len, size - len);
  } finally {
    closeSync(fd);
  }
  const lines = buf.toString('utf8').split('\n').filter((l) => l.trim() !== '');
  return lines[lines.length - 1];
}

export class RunStore {
  readonly configJson: string;
  readonly metricsJsonl: string;
  readonly checkpointsJsonl: string;
  readonly logFile: string;
  private readonly recordFile: string;

  constructor(readonly logPath: string) {
    this.configJson = join(logPath, 'config.json');
    this.metricsJsonl = join(logPath, 'metrics.jsonl');
    this.checkpointsJsonl = join(logPath, 'checkpoints.jsonl');
    this.logFile = join(logPath, 'logs.log');
    this.recordFile = join(logPath, '.cookbook', 'run.json');
  }

  /** Claims the directory for a workflow and writes config.json; a retry of the same run is a no-op. */
  init<C>(record: RunRecord<C>, floatConfigKeys: ReadonlySet<string>): void {
    if (existsSync(this.recordFile)) {
      const owner = (JSON.parse(readFileSync(this.recordFile, 'utf8')) as RunRecord).workflowId;
      if (owner !== record.workflowId) throw new RunDirInUseError(this.logPath, owner);
      return;
    }
    mkdirSync(this.logPath, { recursive: true });
    writeFileAtomic(this.configJson, pyJsonDumps(record.config, { indent: 2, floatKeys: floatConfigKeys }));
    // Written last: its presence means the directory is fully initialised.
    writeFileAtomic(this.recordFile, JSON.stringify(record, null, 2));
  }

  read<C>(): RunRecord<C> {
    if (!existsSync(this.recordFile)) throw new Error(`${this.logPath} is not an initialised run directory`);
    return JSON.parse(readFileSync(this.recordFile, 'utf8')) as RunRecord<C>;
  }

  /**
   * Writes the row for `row.step`. Rows of this step or later ones (left by an attempt that was
   * rolled back to a checkpoint) are replaced, so the file always reads as one clean history.
   */
  writeMetrics(row: MetricsRow & { step: number }): void {
    const line = pyJsonDumps(row, { floatKeys: (k) => !INT_METRIC_KEYS.has(k) }) + '\n';
    const tail = lastLine(this.metricsJsonl);
    const tailStep = tail === undefined ? -1 : (JSON.parse(tail.replace(/\bNaN\b|-?\bInfinity\b/g, 'null')) as { step?: number }).step ?? -1;
    if (tailStep < row.step) {
      mkdirSync(this.logPath, { recursive: true });
      appendFileSync(this.metricsJsonl, line);
      return;
    }
    this.truncateMetrics(row.step);
    appendFileSync(this.metricsJsonl, line);
  }

  /** Drops rows of `fromStep` and later: their updates were undone by a restore from a checkpoint. */
  truncateMetrics(fromStep: number): void {
    if (!existsSync(this.metricsJsonl)) return;
    const lines = readFileSync(this.metricsJsonl, 'utf8').split('\n').filter((l) => l.trim() !== '');
    const kept = lines.filter((l) => ((JSON.parse(l.replace(/\bNaN\b|-?\bInfinity\b/g, 'null')) as { step?: number }).step ?? -1) < fromStep);
    if (kept.length !== lines.length) writeFileAtomic(this.metricsJsonl, kept.map((l) => l + '\n').join(''));
  }

  readMetrics(): Array<Record<string, unknown>> {
    return readJsonl(this.metricsJsonl) as Array<Record<string, unknown>>;
  }

  /** Appends a checkpoint row, or replaces the row with the same name. */
  writeCheckpoint(row: CheckpointRow): void {
    const ordered: Record<string, unknown> = {};
    for (const key of KNOWN_CHECKPOINT_KEYS) if (row[key] !== undefined && row[key] !== null) ordered[key] = row[key];
    for (const [key, value] of Object.entries(row)) if (!KNOWN_CHECKPOINT_KEYS.includes(key)) ordered[key] = value;
    const line = pyJsonDumps(ordered, { floatKeys: (k) => !INT_CHECKPOINT_KEYS.has(k) });
    const rows = existsSync(this.checkpointsJsonl)
      ? readFileSync(this.checkpointsJsonl, 'utf8').split('\n').filter((l) => l.trim() !== '')
      : [];
    const sameName = rows.findIndex((l) => (JSON.parse(l) as CheckpointRow).name === row.name);
    if (sameName === -1) {
      mkdirSync(this.logPath, { recursive: true });
      appendFileSync(this.checkpointsJsonl, line + '\n');
      return;
    }
    if (rows[sameName] === line) return;
    rows[sameName] = line;
    writeFileAtomic(this.checkpointsJsonl, rows.map((l) => l + '\n').join(''));
  }

  readCheckpoints(): CheckpointRow[] {
    return readJsonl(this.checkpointsJsonl) as CheckpointRow[];
  }

  /** A per-iteration file of the reference's layout: `iteration_{step:06d}/<name>`. */
  writeIterationFile(step: number, name: string, text: string): void {
    writeFileAtomic(join(this.logPath, `iteration_${String(step).padStart(6, '0')}`, name), text);
  }

  /** The iteration's rollout record; a retried train step rewrites the same file. */
  writeRolloutRecord(record: RolloutRecord): void {
    writeFileAtomic(join(this.logPath, '.cookbook', 'store', ROLLOUT_RECORDS_DIR, `iteration_${String(record.step).padStart(6, '0')}.json`), JSON.stringify(record));
  }

  /** Every rollout record of the run, by step. */
  readRolloutRecords(): RolloutRecord[] {
    const dir = join(this.logPath, '.cookbook', 'store', ROLLOUT_RECORDS_DIR);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((f) => /^iteration_\d+\.json$/.test(f))
      .sort()
      .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as RolloutRecord)
      .filter((r) => r.format === 'rollout_record/v1');
  }

  /** Claim-check storage: immutable, step-named blobs that workflows reference by relative path. */
  writeBlob(relPath: string, data: string | Uint8Array): string {
    writeFileAtomic(join(this.logPath, '.cookbook', 'store', relPath), data);
    return relPath;
  }

  readBlob(relPath: string): Buffer {
    return readFileSync(join(this.logPath, '.cookbook', 'store', relPath));
  }
}
