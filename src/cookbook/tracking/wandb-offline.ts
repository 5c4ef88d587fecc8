// A W&B offline run directory, `<log_path>/wandb/offline-run-<YYYYMMDD_HHMMSS>-<run id>/`, laid
// out as wandb writes one: the record stream `run-<id>.wandb` that `wandb sync <dir>` replays (the
// run with its config, every history row, summaries, the final checkpoint as a "model" artifact,
// exit and final records; wandb-datastore.ts), and beside it files/config.yaml,
// files/wandb-metadata.json, files/wandb-summary.json and files/wandb-history.jsonl for people
// and tools that read the directory. The history file and the stream each keep their own cursor
// (the history's last line; the stream's cursor under .cookbook/tracking/), so a crash between
// the two writes is caught up on the one that lags, and neither holds a row twice.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CheckedJsonl, writeFileAtomic } from '../run-store-integrity.js';
import { modelArtifact } from './wandb-artifact.js';
import { RecordStream } from './wandb-datastore.js';
import { configYaml, historyRow, wandbRunId } from './wandb-format.js';
import { artifactRecord, exitRecord, finalRecord, historyRecord, runRecord, summaryRecord } from './wandb-record.js';
import type { TrackedRun, TrackingSink } from './sink.js';

function wandbTimestamp(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}_${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
}

/** The run's offline directory: the one an earlier sync created, else a new one stamped now. */
export function offlineRunDir(logPath: string, workflowId: string): string {
  const root = join(logPath, 'wandb');
  const id = wandbRunId(workflowId);
  const existing = existsSync(root) ? readdirSync(root).filter((d) => d.startsWith('offline-run-') && d.endsWith(`-${id}`)).sort() : [];
  return join(root, existing[0] ?? `offline-run-${wandbTimestamp()}-${id}`);
}

export class OfflineWandbRun implements TrackingSink {
  readonly location: string;
  private readonly files: string;
  private readonly history: CheckedJsonl;
  private readonly runId: string;
  /** The record stream `wandb sync` replays. */
  readonly stream: RecordStream;

  constructor(private readonly run: TrackedRun) {
    this.location = offlineRunDir(run.logPath, run.workflowId);
    this.files = join(this.location, 'files');
    this.runId = wandbRunId(run.workflowId);
    this.stream = new RecordStream(join(this.location, `run-${this.runId}.wandb`), join(run.logPath, '.cookbook', 'tracking', 'wandb-offline-stream.json'));
    // Appends are fsynced and committed by a record, so a crash never leaves half a row to count.
    this.history = new CheckedJsonl(run.logPath, join(this.files, 'wandb-history.jsonl'));
  }

  async start(): Promise<void> {
    if (existsSync(join(this.files, 'wandb-metadata.json'))) {
      // A directory from before the stream existed gets one now; its rows follow (lastStep is −1).
      if (!this.stream.cursor()) this.startStream(this.metadata().startedAt);
      return;
    }
    mkdirSync(join(this.location, 'logs'), { recursive: true });
    mkdirSync(join(this.location, 'tmp'), { recursive: true });
    writeFileAtomic(join(this.files, 'config.yaml'), configYaml(this.run.config));
    const metadata = { program: 'durable-cookbook', project: this.run.project, display_name: this.run.name, run_id: this.runId, workflow_id: this.run.workflowId, startedAt: new Date().toISOString() };
    if (!this.stream.cursor()) this.startStream(metadata.startedAt);
    // Written last: its presence means the run directory is complete.
    writeFileAtomic(join(this.files, 'wandb-metadata.json'), `${JSON.stringify(metadata, null, 2)}\n`);
  }

  private metadata(): { startedAt: string } {
    return JSON.parse(readFileSync(join(this.files, 'wandb-metadata.json'), 'utf8')) as { startedAt: string };
  }

  private startStream(startedAt: string): void {
    const info = { runId: this.runId, project: this.run.project, displayName: this.run.name, config: this.run.config, startedAt: new Date(startedAt) };
    this.stream.append((num) => [runRecord(num, info)]);
  }

  private historyLastStep(): number {
    if (!existsSync(this.history.file)) return -1;
    this.history.settle();
    const last = this.history.lastLine();
    if (last === undefined || last.trim() === '') return -1;
    return Number((JSON.parse(last) as { _step: number })._step);
  }

  /** The step both the history file and the record stream hold. */
  async lastStep(): Promise<number> {
    return Math.min(this.historyLastStep(), this.stream.cursor()?.lastStep ?? -1);
  }

  async append(rows: Array<Record<string, unknown>>, summary: Record<string, unknown>): Promise<void> {
    const inHistory = this.historyLastStep();
    for (const row of rows) if (Number(row.step) > inHistory) this.history.append(JSON.stringify(historyRow(row)));
    const inStream = this.stream.cursor()?.lastStep ?? -1;
    const fresh = rows.filter((row) => Number(row.step) > inStream);
    if (fresh.length) {
      this.stream.append((num) => [...fresh.map((row, i) => historyRecord(num + i, row)), summaryRecord(num + fresh.length, summary)], { lastStep: Number(fresh.at(-1)!.step) });
    }
    writeFileAtomic(join(this.files, 'wandb-summary.json'), JSON.stringify(summary));
  }

  async finished(): Promise<boolean> {
    return existsSync(join(this.files, 'final_checkpoint.json')) && this.stream.cursor()?.finished === true;
  }

  async finish(summary: Record<string, unknown>, final: Record<string, unknown>, checkpointsJsonl: string): Promise<void> {
    writeFileAtomic(join(this.files, 'wandb-summary.json'), JSON.stringify(summary));
    if (!this.stream.cursor()?.finished) {
      const artifact = modelArtifact(this.runId, final, checkpointsJsonl);
      // The artifact's file lives in the run directory, where `wandb sync` uploads it from.
      const localPath = join(this.location, 'artifacts', artifact.name, 'checkpoints.jsonl');
      writeFileAtomic(localPath, checkpointsJsonl);
      const entries = artifact.entries.map((e) => (e.path === 'checkpoints.jsonl' ? { ...e, localPath } : e));
      const runtime = Math.max(0, Math.round((Date.now() - new Date(this.metadata().startedAt).getTime()) / 1000));
      this.stream.append(
        (num) => [summaryRecord(num, summary), artifactRecord(num + 1, { ...artifact, runId: this.runId, project: this.run.project, entries }), exitRecord(num + 2, 0, runtime), finalRecord(num + 3)],
        { finished: true },
      );
    }
    writeFileAtomic(join(this.files, 'final_checkpoint.json'), `${JSON.stringify(final, null, 2)}\n`);
  }

  /** The mirrored history rows (tests and tools). */
  readHistory(): Array<Record<string, unknown>> {
    if (!existsSync(this.history.file)) return [];
    return this.history.readLines().filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  readSummary(): Record<string, unknown> {
    return JSON.parse(readFileSync(join(this.files, 'wandb-summary.json'), 'utf8')) as Record<string, unknown>;
  }
}
