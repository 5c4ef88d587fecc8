// Where each step's time went, for `cookbook report`: per run a stacked per-step breakdown of its
// timing spans and, for a spread of steps, a Gantt of each step's spans across activities and
// workers (gantt.ts). Read from timing_spans.jsonl (the reference's file; rows that also name each
// span's activity and worker lay out the Gantt's lanes).
import { RunStore } from '../cookbook/run-store.js';
import type { Span, TimingRow } from '../cookbook/timing.js';
import { renderSvg, runColor } from './charts.js';
import { ganttSvg, spanColors, type SpanColors } from './gantt.js';
import { esc, fmt } from './html.js';
import { ReportError, type RunData } from './load.js';
import { spread } from './rollouts.js';

/** Gantt charts per run: this many steps, evenly spaced, and the slowest one. */
export const GANTT_STEPS = 8;

export interface RunTiming {
  run: RunData;
  rows: TimingRow[];
}

/** The timing rows of a run (none for a run without timing_spans.jsonl). */
export function loadTiming(run: RunData): RunTiming {
  try {
    return { run, rows: new RunStore(run.logDir).readTimingSpans().filter((r) => typeof r.step === 'number' && Array.isArray(r.spans)) };
  } catch (err) {
    throw new ReportError(`cannot read the timing spans of ${run.logDir}: ${(err as Error).message}`);
  }
}

const endOf = (row: TimingRow) => Math.max(0, ...row.spans.map((s) => s.wall_end));

/**
 * The spans inside no span of another name. Spans of equal extent nest by name, so exactly one of
 * them is outermost. One sweep by start (outer spans first), keeping the latest end seen under two
 * different names: a step can have thousands of spans.
 */
export function outermostSpans(spans: readonly Span[]): Span[] {
  const sorted = [...spans].sort((a, b) => a.wall_start - b.wall_start || b.wall_end - a.wall_end || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let first = { end: Number.NEGATIVE_INFINITY, name: '' };
  let second = { end: Number.NEGATIVE_INFINITY, name: '' };
  const out: Span[] = [];
  for (const s of sorted) {
    const covering = first.name !== s.name ? first.end : second.end;
    if (covering < s.wall_end) out.push(s);
    if (s.wall_end > first.end) {
      if (s.name !== first.name) second = first;
      first = { end: s.wall_end, name: s.name };
    } else if (s.name !== first.name && s.wall_end > second.end) second = { end: s.wall_end, name: s.name };
  }
  return out;
}

/** Seconds covered by a set of intervals (parallel spans of one name count once). */
function unionSeconds(spans: readonly Span[]): number {
  const sorted = [...spans].sort((a, b) => a.wall_start - b.wall_start);
  let total = 0;
  let [start, end] = [Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY];
  for (const s of sorted) {
    if (s.wall_start > end) {
      if (end > start) total += end - start;
      [start, end] = [s.wall_start, s.wall_end];
    } else end = Math.max(end, s.wall_end);
  }
  return total + (end > start ? end - start : 0);
}

/**
 * A step's time by its outermost spans (those inside no span of another name: sampling, training,
 * evals, the waits between activities), each the wall time its spans cover. What they contain
 * (policy_sample inside sampling, backend_wait inside step) is in the step's Gantt.
 */
export function stepBreakdown(row: TimingRow): Array<{ name: string; seconds: number }> {
  const outermost = outermostSpans(row.spans);
  const names = [...new Set(outermost.map((s) => s.name))];
  return names.map((name) => ({ name, seconds: unionSeconds(outermost.filter((s) => s.name === name)) }));
}

/** The stacked bars of a run: one bar per step, a segment per outermost span name; `time/total` as a line where logged. */
async function panelSvg(t: RunTiming, idPrefix: string, spanColor: SpanColors): Promise<string> {
  const bars = t.rows.flatMap((row) => stepBreakdown(row).map(({ name, seconds }) => ({ step: row.step, span: name, seconds })));
  const totals = t.run.metrics.filter((m) => typeof m['time/total'] === 'number').map((m) => ({ step: m.step as number, total: m['time/total'] as number }));
  const names = [...new Set(bars.map((b) => b.span))];
  const x = { field: 'step', type: 'ordinal' as const, title: 'step', axis: { labelOverlap: true } };
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: `${t.run.label}: seconds per step`, fontSize: 12, anchor: 'start' as const },
    width: 640,
    height: 200,
    background: 'white',
    layer: [
      {
        data: { values: bars },
        mark: { type: 'bar' as const },
        encoding: {
          x,
          y: { field: 'seconds', type: 'quantitative' as const, aggregate: 'sum' as const, stack: 'zero' as const, title: 'seconds' },
          color: { field: 'span', type: 'nominal' as const, scale: { domain: names, range: names.map(spanColor) }, legend: { title: 'span', orient: 'right' as const } },
        },
      },
      ...(totals.length
        ? [{ data: { values: totals }, mark: { type: 'line' as const, color: '#222', point: { size: 12, color: '#222' } }, encoding: { x, y: { field: 'total', type: 'quantitative' as const } } }]
        : []),
    ],
  };
  return renderSvg(spec as Parameters<typeof renderSvg>[0], idPrefix);
}

/** The timing section: per run with timing rows, its panel and the Gantt of a spread of its steps. */
export async function renderTimingSection(runs: readonly RunData[]): Promise<string> {
  const timed = runs.map(loadTiming).filter((t) => t.rows.length > 0);
  if (timed.length === 0) return '';
  const colors = spanColors(timed.flatMap((t) => t.rows.flatMap((r) => r.spans.map((s) => s.name))));
  const parts: string[] = [];
  for (const [i, t] of timed.entries()) {
    const slowest = t.rows.reduce((a, b) => (endOf(b) > endOf(a) ? b : a));
    const shown = [...new Set([...spread(t.rows, GANTT_STEPS), slowest])].sort((a, b) => a.step - b.step);
    const gantts = shown.map(
      (row) =>
        `<details class="gantt" id="gantt-${i}-${row.step}" data-step="${row.step}"><summary>step ${row.step} · ${esc(fmt(endOf(row)))} s${row === slowest ? ' (slowest)' : ''} · ${row.spans.length} spans</summary><figure>${ganttSvg(row, colors)}</figure></details>`,
    );
    const runIndex = runs.indexOf(t.run);
    parts.push(
      `<h3><span class="swatch" style="background:${runColor(runIndex)}"></span>${esc(t.run.label)}</h3><figure class="timing-panel" data-run="${esc(t.run.label)}">${await panelSvg(t, `t${i}`, colors)}</figure>` +
        `<p class="muted">${t.rows.length} steps timed; each bar adds up a step's outermost spans (work that ran in parallel adds up: a bar can be longer than the step). The Gantt of a step shows every span by activity and worker${shown.length < t.rows.length ? `, for ${shown.length} of the steps` : ''}.</p>${gantts.join('')}`,
    );
  }
  return `<h2 id="timing">Timing</h2>${parts.join('')}`;
}
