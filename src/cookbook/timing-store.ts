// The spans of a step's activities between the activity that measured them and the one that writes
// the step's row: one file per activity execution under `.cookbook/store/timing/`, named by the
// activity's logical position (a retried attempt rewrites its own file, so nothing is counted twice),
// read by the row's writer and removed with the rows of steps a restore rolls back.
//
// Unlike the run store's records these files are written without fsync (renamed into place, so never
// half-visible): they are diagnostics, a step's row is written from them within seconds, and a file
// lost to a power cut or damaged is skipped rather than failing a training step. That keeps timing's
// cost per activity at a file write (bench/overhead measures it).
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Span } from './timing.js';

const TIMING_DIR = join('.cookbook', 'store', 'timing');
const pad = (n: number) => String(n).padStart(6, '0');

/** Where an activity's spans for `step` live, relative to the run's timing folder. */
export const stepSpansFile = (step: number, key: string) => join(`step_${pad(step)}`, `${key}.json`);

const stepOf = (dir: string) => (/^step_(\d+)$/.exec(dir) ? Number(dir.slice(5)) : undefined);

export class TimingStore {
  private readonly root: string;

  constructor(logPath: string) {
    this.root = join(logPath, TIMING_DIR);
  }

  /** Writes (or rewrites, for a retried attempt) the spans at `rel`. */
  write(rel: string, spans: readonly Span[]): void {
    const file = join(this.root, rel);
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    writeFileSync(tmp, JSON.stringify(spans));
    renameSync(tmp, file);
  }

  /** The spans at `rel`; none when the file is missing or unreadable. */
  read(rel: string): Span[] {
    try {
      const spans = JSON.parse(readFileSync(join(this.root, rel), 'utf8')) as unknown;
      return Array.isArray(spans) ? (spans as Span[]).filter((s) => typeof s?.name === 'string' && Number.isFinite(s.wall_start) && Number.isFinite(s.wall_end)) : [];
    } catch {
      return [];
    }
  }

  /** Every span recorded for `step`, but those in `except` (the reading activity's own file). */
  readStep(step: number, except?: string): Span[] {
    const dir = join(this.root, `step_${pad(step)}`);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => join(`step_${pad(step)}`, f))
      .filter((rel) => rel !== except)
      .flatMap((rel) => this.read(rel));
  }

  /** Forgets the spans of `fromStep` and later: those steps are replayed after a restore. */
  removeFrom(fromStep: number): void {
    if (!existsSync(this.root)) return;
    for (const dir of readdirSync(this.root)) {
      const step = stepOf(dir);
      if (step !== undefined && step >= fromStep) rmSync(join(this.root, dir), { recursive: true, force: true });
    }
  }
}
