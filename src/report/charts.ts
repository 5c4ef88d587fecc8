// Metric curves: one Vega-Lite line chart per metrics.jsonl key, every run of the report overlaid,
// rendered to SVG in Node (no browser, no script in the page). Keys are grouped by their prefix
// the way the reference's metric names are namespaced (train keys have none; test/, env/, optim/,
// time/, …), which is also how experiment trackers lay out its panels.
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import type { RunData } from './load.js';

export interface MetricGroup {
  /** `train` for keys without a prefix, else the part before the first '/'. */
  name: string;
  keys: string[];
}

/** Keys that are the x axis or bookkeeping, not curves. */
const NOT_PLOTTED = new Set(['step']);
/** Sections in this order, then the others alphabetically, timings last. */
const GROUP_ORDER = ['train', 'test', 'eval', 'env', 'optim'];

/** Run colours, shared by the charts and the page's run table. */
export const RUN_COLORS: readonly string[] = vega.scheme('tableau10') as string[];
export const runColor = (index: number) => RUN_COLORS[index % RUN_COLORS.length];

export const groupOf = (key: string) => (key.includes('/') ? key.slice(0, key.indexOf('/')) : 'train');

/** Every key with a numeric value in some row of some run, by group, in first-seen order. */
export function metricGroups(runs: readonly RunData[]): MetricGroup[] {
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const run of runs) {
    for (const row of run.metrics) {
      for (const [key, value] of Object.entries(row)) {
        if (seen.has(key) || NOT_PLOTTED.has(key) || typeof value !== 'number') continue;
        seen.add(key);
        keys.push(key);
      }
    }
  }
  const groups = new Map<string, string[]>();
  for (const key of keys) groups.set(groupOf(key), [...(groups.get(groupOf(key)) ?? []), key]);
  const rank = (g: string) => (g === 'time' ? 1e6 : GROUP_ORDER.includes(g) ? GROUP_ORDER.indexOf(g) : GROUP_ORDER.length);
  return [...groups.entries()]
    .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
    .map(([name, groupKeys]) => ({ name, keys: groupKeys }));
}

interface Point {
  step: number;
  value: number;
  run: string;
}

function pointsOf(key: string, runs: readonly RunData[]): Point[] {
  const points: Point[] = [];
  for (const run of runs) {
    for (const row of run.metrics) {
      const value = row[key];
      // NaN and ±Infinity were read as null (JSON has no literal for them): gaps, not points.
      if (typeof value === 'number' && Number.isFinite(value)) points.push({ step: row.step as number, value, run: run.label });
    }
  }
  return points;
}

export function chartSpec(key: string, runs: readonly RunData[]): TopLevelSpec {
  const points = pointsOf(key, runs);
  const labels = runs.map((r) => r.label);
  const sparse = points.length <= 60 * runs.length;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: key, fontSize: 12, anchor: 'start' },
    width: 320,
    height: 170,
    background: 'white',
    data: { values: points },
    // Points as well as lines for short runs: an eval metric logged every few steps, or a single
    // step, would otherwise draw nothing visible.
    mark: { type: 'line', point: sparse ? { size: 18 } : false, strokeWidth: 1.5, interpolate: 'linear' },
    encoding: {
      x: { field: 'step', type: 'quantitative', title: 'step', axis: { tickMinStep: 1, format: 'd' } },
      y: { field: 'value', type: 'quantitative', title: null, scale: { zero: false }, axis: { format: '~g' } },
      // The whole run list as the colour domain: a run keeps its colour in every chart, also in
      // charts of keys it never logged. One run needs no legend.
      color: { field: 'run', type: 'nominal', scale: { domain: labels, range: labels.map((_, i) => runColor(i)) }, legend: runs.length > 1 ? { title: null, orient: 'bottom', columns: 1, labelLimit: 360 } : null },
    },
  };
}

/** SVG of one spec. Element ids (clip paths, gradients) get a per-chart prefix: the page inlines many SVGs. */
export async function renderSvg(spec: TopLevelSpec, idPrefix: string): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    return svg.replace(/\bid="([^"]+)"/g, `id="${idPrefix}-$1"`).replace(/url\(#([^)]+)\)/g, `url(#${idPrefix}-$1)`);
  } finally {
    view.finalize();
  }
}

export async function renderCharts(runs: readonly RunData[], groups: readonly MetricGroup[]): Promise<Map<string, string>> {
  const svgs = new Map<string, string>();
  let n = 0;
  for (const group of groups) {
    for (const key of group.keys) svgs.set(key, await renderSvg(chartSpec(key, runs), `c${n++}`));
  }
  return svgs;
}
