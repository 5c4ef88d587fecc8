// The progress line of `watch` and `train --wait`: redrawn in place on a terminal, one plain line
// per change otherwise (CI logs, pipes).
import type { Progress } from '../workflows/shared/messages.js';

const LOSS_KEYS = ['train_mean_nll', 'loss', 'env/all/reward/total', 'dpo_loss'];

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}` : `${m}:${String(sec).padStart(2, '0')}`;
}

/** Seconds left, from the pace of the last completed steps (workflow time). */
export function eta(p: Progress): number | undefined {
  const times = p.recentStepTimes;
  if (times.length < 2) return undefined;
  const [s0, t0] = times[0];
  const [s1, t1] = times[times.length - 1];
  if (s1 <= s0) return undefined;
  return ((t1 - t0) / (s1 - s0) / 1000) * (p.totalSteps - p.step);
}

export function progressLine(p: Progress, width = 24): string {
  const frac = p.totalSteps > 0 ? Math.min(p.step / p.totalSteps, 1) : 0;
  const filled = Math.round(frac * width);
  const bar = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
  const parts = [`step ${p.step}/${p.totalSteps}`, bar, `${Math.round(frac * 100)}%`];
  const left = eta(p);
  if (left !== undefined && p.step < p.totalSteps) parts.push(`ETA ${formatDuration(left)}`);
  const lossKey = LOSS_KEYS.find((k) => p.lastMetrics[k] !== undefined);
  if (lossKey) parts.push(`${lossKey} ${p.lastMetrics[lossKey].toFixed(4)}`);
  parts.push(p.paused ? 'paused' : p.status);
  return parts.join(' · ');
}

export class ProgressPrinter {
  private last = '';
  constructor(private readonly out: NodeJS.WriteStream = process.stdout) {}

  update(p: Progress): void {
    const line = progressLine(p);
    if (line === this.last) return;
    this.last = line;
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${line}`);
    else this.out.write(`${line}\n`);
  }

  done(): void {
    if (this.out.isTTY && this.last) this.out.write('\n');
  }
}
