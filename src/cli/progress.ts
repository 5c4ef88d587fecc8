// The progress line of `watch` and `train --wait`: redrawn in place on a terminal, one plain line
// per change otherwise (CI logs, pipes).
import type { Progress } from '../workflows/shared/messages.js';
import { formatNumber } from './numbers.js';

const LOSS_KEYS = ['train_mean_nll', 'loss', 'env/all/reward/total', 'dpo_loss'];

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}` : `${m}:${String(sec).padStart(2, '0')}`;
}

/** When the watcher saw each step count first: the pace it measures itself (workflows keep no clocks). */
export type StepTimes = Array<[step: number, atMs: number]>;

/** Seconds left, from the pace of the last steps the watcher saw. */
export function eta(p: Progress, times: StepTimes): number | undefined {
  if (times.length < 2) return undefined;
  const [s0, t0] = times[0];
  const [s1, t1] = times[times.length - 1];
  if (s1 <= s0) return undefined;
  return ((t1 - t0) / (s1 - s0) / 1000) * (p.totalSteps - p.step);
}

export function progressLine(p: Progress, times: StepTimes = [], width = 24): string {
  const frac = p.totalSteps > 0 ? Math.min(p.step / p.totalSteps, 1) : 0;
  const filled = Math.round(frac * width);
  const bar = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
  const parts = [`step ${p.step}/${p.totalSteps}`, bar, `${Math.round(frac * 100)}%`];
  const left = eta(p, times);
  if (left !== undefined && p.step < p.totalSteps) parts.push(`ETA ${formatDuration(left)}`);
  const lossKey = LOSS_KEYS.find((k) => p.lastMetrics[k] !== undefined);
  if (lossKey) parts.push(`${lossKey} ${formatNumber(p.lastMetrics[lossKey], 4)}`);
  parts.push(statusWords(p));
  return parts.join(' · ');
}

/** The run's status and a control it has not reached yet (`running (pause requested)`), each said once. */
export function statusWords(p: Pick<Progress, 'status' | 'paused' | 'stopRequested'>): string {
  const pending = [p.paused && p.status !== 'paused' && !p.stopRequested ? 'pause requested' : '', p.stopRequested && p.status !== 'stopping' && p.status !== 'stopped' ? 'stop requested' : ''].filter(Boolean);
  return pending.length ? `${p.status} (${pending.join(', ')})` : p.status;
}

const PACE_WINDOW = 20;

export class ProgressPrinter {
  private last = '';
  private times: StepTimes = [];
  constructor(private readonly out: NodeJS.WriteStream = process.stdout) {}

  update(p: Progress, nowMs = Date.now()): void {
    const seen = this.times[this.times.length - 1];
    if (!seen || p.step > seen[0]) this.times = [...this.times, [p.step, nowMs] as [number, number]].slice(-PACE_WINDOW);
    else if (p.step < seen[0]) this.times = [[p.step, nowMs]]; // rolled back by a restore
    const line = progressLine(p, this.times);
    if (line === this.last) return;
    this.last = line;
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${line}`);
    else this.out.write(`${line}\n`);
  }

  /** A line about the run beside the progress (no worker, a failing activity): on a terminal, above the redrawn bar. */
  note(text: string): void {
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${text}\n${this.last}`);
    else this.out.write(`${text}\n`);
  }

  done(): void {
    if (this.out.isTTY && this.last) this.out.write('\n');
  }
}
