// A W&B offline run directory, `<log_path>/wandb/offline-run-<YYYYMMDD_HHMMSS>-<run id>/`, laid
// out as wandb writes one: files/config.yaml, files/wandb-metadata.json, files/wandb-summary.json
// and the history. What it does not write is wandb's binary transaction log, `run-<id>.wandb`
// (protobuf records in LevelDB log framing), which is what `wandb sync` replays; see
// docs/continue-and-tracking.md for what that means and how to upload these runs.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CheckedJsonl, writeFileAtomic } from '../run-store-integrity.js';
import { configYaml, historyRow, wandbRunId } from './wandb-format.js';
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

  constructor(private readonly run: TrackedRun) {
    this.location = offlineRunDir(run.logPath, run.workflowId);
    this.files = join(this.location, 'files');
    // Appends are fsynced and committed by a record, so a crash never leaves half a row to count.
    this.history = new CheckedJsonl(run.logPath, join(this.files, 'wandb-history.jsonl'));
  }

  async start(): Promise<void> {
    if (existsSync(join(this.files, 'wandb-metadata.json'))) return;
    mkdirSync(join(this.location, 'logs'), { recursive: true });
    mkdirSync(join(this.location, 'tmp'), { recursive: true });
    writeFileAtomic(join(this.files, 'config.yaml'), configYaml(this.run.config));
    const metadata = { program: 'durable-cookbook', project: this.run.project, display_name: this.run.name, run_id: wandbRunId(this.run.workflowId), workflow_id: this.run.workflowId, startedAt: new Date().toISOString() };
    // Written last: its presence means the run directory is complete.
    writeFileAtomic(join(this.files, 'wandb-metadata.json'), `${JSON.stringify(metadata, null, 2)}\n`);
  }

  async lastStep(): Promise<number> {
    if (!existsSync(this.history.file)) return -1;
    this.history.settle();
    const last = this.history.lastLine();
    if (last === undefined || last.trim() === '') return -1;
    return Number((JSON.parse(last) as { _step: number })._step);
  }

  async append(rows: Array<Record<string, unknown>>, summary: Record<string, unknown>): Promise<void> {
    for (const row of rows) this.history.append(JSON.stringify(historyRow(row)));
    writeFileAtomic(join(this.files, 'wandb-summary.json'), JSON.stringify(summary));
  }

  async finished(): Promise<boolean> {
    return existsSync(join(this.files, 'final_checkpoint.json'));
  }

  async finish(summary: Record<string, unknown>, artifacts: Record<string, unknown>): Promise<void> {
    writeFileAtomic(join(this.files, 'wandb-summary.json'), JSON.stringify(summary));
    writeFileAtomic(join(this.files, 'final_checkpoint.json'), `${JSON.stringify(artifacts, null, 2)}\n`);
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
