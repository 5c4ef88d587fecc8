// A step's spans as a Gantt chart (inline SVG, no script): one lane per activity execution, named
// with the worker that ran it, spans that overlap within a lane (nested scopes, parallel samples)
// on rows of their own; a `step` lane for spans several activities made together (sampling across
// the rollouts, a pipelined step's submit and collection).
import { groupInto, WAIT_SPANS, type Span, type TimingRow } from '../cookbook/timing.js';
import { esc, fmt } from './html.js';

const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#86bcb6', '#d37295', '#8cd17d', '#b6992d', '#499894', '#f1ce63', '#a0cbe8', '#ffbe7d', '#d4a6c8'];
const WAIT_COLORS: Record<string, string> = { queue_wait: '#bab0ac', activity_retry: '#79706e', backend_wait: '#d7d7d7', backend_retry: '#9d9d9d' };

export type SpanColors = (name: string) => string;

/** Colours of span names, the same in every chart of the report: waits in greys, the others in order of appearance. */
export function spanColors(names: Iterable<string>): SpanColors {
  const work = [...new Set(names)].filter((n) => !WAIT_SPANS.has(n));
  return (name) => (WAIT_SPANS.has(name) ? (WAIT_COLORS[name] ?? '#bbbbbb') : PALETTE[Math.max(0, work.indexOf(name)) % PALETTE.length]);
}

const LABEL_W = 230;
const PLOT_W = 700;
const ROW_H = 13;
const LANE_GAP = 5;
const AXIS_H = 22;

interface Lane {
  label: string;
  rows: Span[][];
}

/** Spans of one lane on rows where none overlaps another (outer spans first, so nesting reads top-down). */
function packRows(spans: readonly Span[]): Span[][] {
  const rows: Span[][] = [];
  const sorted = [...spans].sort((a, b) => a.wall_start - b.wall_start || b.duration - a.duration);
  for (const s of sorted) {
    const row = rows.find((r) => r[r.length - 1].wall_end <= s.wall_start);
    if (row) row.push(s);
    else rows.push([s]);
  }
  return rows;
}

function lanes(row: TimingRow): Lane[] {
  const byLane = new Map<string, Span[]>();
  for (const s of row.spans) {
    const label = s.activity ? `${s.activity}${s.worker ? ` · ${s.worker}` : ''}` : 'step';
    groupInto(byLane, label, s);
  }
  const first = (spans: Span[]) => Math.min(...spans.map((s) => s.wall_start));
  return [...byLane.entries()]
    .sort(([a, x], [b, y]) => (a === 'step' ? -1 : b === 'step' ? 1 : first(x) - first(y)))
    .map(([label, spans]) => ({ label, rows: packRows(spans) }));
}

/** A step's Gantt: SVG plus a legend of its span names. */
export function ganttSvg(row: TimingRow, spanColor: SpanColors = spanColors(row.spans.map((s) => s.name))): string {
  const all = lanes(row);
  const end = Math.max(1e-6, ...row.spans.map((s) => s.wall_end));
  const x = (t: number) => LABEL_W + (t / end) * PLOT_W;
  const height = AXIS_H + all.reduce((h, l) => h + l.rows.length * ROW_H + LANE_GAP, 0);
  const parts: string[] = [];
  for (let i = 0; i <= 5; i++) {
    const t = (end * i) / 5;
    parts.push(`<line x1="${x(t)}" y1="${AXIS_H - 4}" x2="${x(t)}" y2="${height}" stroke="#eee"/><text x="${x(t)}" y="12" font-size="10" text-anchor="middle" fill="#555">${esc(fmt(Number(t.toPrecision(3))))} s</text>`);
  }
  let y = AXIS_H;
  for (const lane of all) {
    parts.push(`<text x="${LABEL_W - 6}" y="${y + ROW_H - 3}" font-size="10" text-anchor="end" fill="#333">${esc(lane.label.length > 44 ? `${lane.label.slice(0, 43)}…` : lane.label)}</text>`);
    for (const spans of lane.rows) {
      for (const s of spans) {
        const w = Math.max(0.5, x(s.wall_end) - x(s.wall_start));
        const tip = `${s.name} · ${fmt(s.duration)} s (${fmt(s.wall_start)}–${fmt(s.wall_end)} s)${s.request ? ` · ${s.request}${s.polls ? ` (${s.polls} poll${s.polls === 1 ? '' : 's'})` : ''}` : ''}${s.activity ? ` · ${s.activity}` : ''}${s.worker ? ` on ${s.worker}` : ''}`;
        const label = w > 46 ? `<text x="${x(s.wall_start) + 3}" y="${y + ROW_H - 4}" font-size="9" fill="#111" pointer-events="none">${esc(s.name.length * 5 > w ? `${s.name.slice(0, Math.max(1, Math.floor(w / 5) - 1))}…` : s.name)}</text>` : '';
        parts.push(`<rect class="span" data-name="${esc(s.name)}" x="${x(s.wall_start).toFixed(2)}" y="${y + 1}" width="${w.toFixed(2)}" height="${ROW_H - 2}" fill="${spanColor(s.name)}" stroke="#fff" stroke-width="0.5"><title>${esc(tip)}</title></rect>${label}`);
      }
      y += ROW_H;
    }
    parts.push(`<line x1="0" y1="${y + LANE_GAP / 2}" x2="${LABEL_W + PLOT_W}" y2="${y + LANE_GAP / 2}" stroke="#e4e4e4"/>`);
    y += LANE_GAP;
  }
  const names = [...new Set(row.spans.map((s) => s.name))];
  const legend = names.map((n) => `<span class="legend-item"><span class="swatch" style="background:${spanColor(n)}"></span>${esc(n)}</span>`).join(' ');
  return `<svg xmlns="http://www.w3.org/2000/svg" class="gantt-chart" width="${LABEL_W + PLOT_W + 10}" height="${height}" viewBox="0 0 ${LABEL_W + PLOT_W + 10} ${height}" font-family="system-ui,sans-serif">${parts.join('')}</svg><div class="kv">${legend}</div>`;
}
