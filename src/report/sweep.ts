// A sweep's log dir in the report: its points' runs (curves overlaid, one colour per point) and
// the results table ranked by the sweep's metric, read from files only — the sweep's config.json
// (which points exist), `points/<name>.json` (finished points, written by the sweep) and, for a
// point still training, its own metrics.jsonl so far. A pipeline point is shown by its metric stage
// (its curves overlaid, its metrics ranked).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bestIndex, expandPoints, metricSubdir, type PointSpec } from '../cookbook/config/sweep-points.js';
import { finalMetrics, readPointRecords } from '../cookbook/sweep-results.js';
import type { SweepRow, SweepTable } from '../workflows/sweep.js';
import { esc, fmt } from './html.js';
import type { RunData } from './load.js';

export interface SweepReport extends SweepTable {
  label: string;
}

interface SweepConfigFile extends PointSpec {
  kind: string;
  metric_stage?: number | null;
  base?: Record<string, unknown>;
  metric: string;
  mode: 'min' | 'max';
}

export const isSweepRun = (run: RunData) => run.kind === 'sweep' && run.config !== null;

/** A point's run whose metrics rank it: the point itself, or a pipeline point's metric stage. */
function metricsDirOf(cfg: SweepConfigFile, sweepDir: string, pointName: string): string {
  const sub = metricSubdir(cfg);
  return sub ? join(sweepDir, pointName, sub) : join(sweepDir, pointName);
}

/** The log dirs of the sweep's points that have started, in point order (a pipeline point's metric stage). */
export function sweepPointDirs(sweep: RunData): string[] {
  const cfg = sweep.config as unknown as SweepConfigFile;
  return expandPoints(cfg)
    .map((p) => metricsDirOf(cfg, sweep.logDir, p.name))
    .filter((dir) => existsSync(join(dir, 'config.json')));
}

export function loadSweepTable(sweep: RunData): SweepReport {
  const cfg = sweep.config as unknown as SweepConfigFile;
  const records = new Map(readPointRecords(sweep.logDir).map((r) => [r.index, r]));
  const points: SweepRow[] = expandPoints(cfg).map((p) => {
    const r = records.get(p.index);
    const base = { index: p.index, name: p.name, workflowId: r?.workflow_id ?? '', params: p.params };
    if (r) return { ...base, status: r.status, steps: r.steps, value: finite(r.metrics[cfg.metric]), ...(r.error ? { error: r.error } : {}) };
    if (!existsSync(join(sweep.logDir, p.name, 'config.json'))) return { ...base, status: 'pending', steps: null, value: null };
    // A pipeline point may still be in an earlier stage: no value yet, and its steps are stages.
    const so_far = finalMetrics(metricsDirOf(cfg, sweep.logDir, p.name));
    const steps = metricSubdir(cfg) ? null : typeof so_far.step === 'number' ? so_far.step + 1 : 0;
    return { ...base, status: 'running', steps, value: finite(so_far[cfg.metric]) };
  });
  const finished = points.filter((p) => p.status !== 'running' && p.status !== 'pending');
  return { label: sweep.label, metric: cfg.metric, mode: cfg.mode, points, best: bestIndex(finished, cfg.mode) };
}

const finite = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The results table of each sweep: ranked by the metric, the best marked; swatches match the curves. */
export function renderSweepSection(sweeps: readonly SweepReport[], colorOf: (pointName: string) => string | undefined): string {
  if (sweeps.length === 0) return '';
  const parts = sweeps.map((s) => {
    const keys = [...new Set(s.points.flatMap((p) => Object.keys(p.params)))];
    const sign = s.mode === 'min' ? 1 : -1;
    const ranked = [...s.points].sort((a, b) => (a.value === null || b.value === null ? (a.value === null ? 1 : 0) - (b.value === null ? 1 : 0) : sign * (a.value - b.value)) || a.index - b.index);
    const rows = ranked.map((p) => {
      const color = colorOf(p.name);
      const swatch = color ? `<span class="swatch" style="background:${color}"></span>` : '';
      const cells = [
        `<td>${p.index === s.best ? '★' : ''}</td>`,
        `<td>${swatch}${esc(p.name)}</td>`,
        ...keys.map((k) => `<td class="num">${esc(fmt(p.params[k]))}</td>`),
        `<td>${esc(p.status)}${p.error ? ` <span class="bad">${esc(p.error)}</span>` : ''}</td>`,
        `<td class="num">${esc(fmt(p.steps))}</td>`,
        `<td class="num">${esc(fmt(p.value))}</td>`,
      ];
      return `<tr${p.index === s.best ? ' class="best"' : ''}>${cells.join('')}</tr>`;
    });
    const head = ['', 'point', ...keys, 'status', 'steps', `${s.metric} (${s.mode})`].map((h) => `<th>${esc(h)}</th>`).join('');
    const best = s.best === undefined ? `no finished point has a finite ${s.metric} yet` : `best: ${s.points[s.best].name} · ${s.metric} ${fmt(s.points[s.best].value)}`;
    const done = s.points.filter((p) => p.status !== 'pending' && p.status !== 'running').length;
    return `<h3>${esc(s.label)} <span class="muted">(${done}/${s.points.length} points finished)</span></h3><p>${esc(best)}</p><table class="sweep-results"><thead><tr>${head}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
  });
  return `<h2 id="sweep">Sweep results</h2>${parts.join('')}`;
}
