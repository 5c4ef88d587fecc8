// A sweep's points: the grid's cartesian product (first key slowest, last fastest, as the
// reference's itertools.product), each crossed with the random search's samples, cut at max_runs.
// Plain code with no Node or schema imports: the sweep workflow expands the points itself, so a
// random sample is a pure function of (seed, point, key) — the same on every replay and worker.
import { deriveSeed } from '../rl/seeds.js';

export type RandomDistribution = { uniform: [number, number] } | { log_uniform: [number, number] } | { choice: unknown[] };

export interface PointSpec {
  grid?: Record<string, unknown[]>;
  random?: { n: number; seed: number; space: Record<string, RandomDistribution> };
  max_runs?: number | null;
}

export interface SweepPoint {
  index: number;
  /** Dotted config key → value, grid keys first, in the config's key order. */
  params: Record<string, unknown>;
  /** `<index>-<key>=<value>_…`: stable, readable, unique within the sweep (the index). */
  name: string;
}

function gridProduct(grid: Record<string, unknown[]>): Array<Record<string, unknown>> {
  let points: Array<Record<string, unknown>> = [{}];
  for (const [key, values] of Object.entries(grid)) points = points.flatMap((p) => values.map((v) => ({ ...p, [key]: v })));
  return points;
}

/** A uniform double in [0, 1) from 53 derived bits. */
function unit(seed: number, sample: number, keyIndex: number): number {
  const hi = deriveSeed(seed, sample, keyIndex, 0) >>> 5; // 26 bits
  const lo = deriveSeed(seed, sample, keyIndex, 1) >>> 4; // 27 bits
  return (hi * 134217728 + lo) / 9007199254740992;
}

export function drawValue(dist: RandomDistribution, u: number): unknown {
  if ('uniform' in dist) return dist.uniform[0] + u * (dist.uniform[1] - dist.uniform[0]);
  if ('log_uniform' in dist) {
    const [lo, hi] = dist.log_uniform.map(Math.log);
    return Math.exp(lo + u * (hi - lo));
  }
  return dist.choice[Math.min(dist.choice.length - 1, Math.floor(u * dist.choice.length))];
}

/** Sample `i` of the random search: one draw per key, each from its own derived stream. */
function randomSample(random: NonNullable<PointSpec['random']>, i: number): Record<string, unknown> {
  return Object.fromEntries(Object.entries(random.space).map(([key, dist], k) => [key, drawValue(dist, unit(random.seed, i, k))]));
}

export function countPoints(spec: PointSpec): number {
  const grid = Object.values(spec.grid ?? {}).reduce((n, values) => n * values.length, 1);
  const total = grid * (spec.random ? spec.random.n : 1);
  return spec.max_runs != null ? Math.min(total, spec.max_runs) : total;
}

export function expandPoints(spec: PointSpec): SweepPoint[] {
  const grid = gridProduct(spec.grid ?? {});
  const samples = spec.random ? Array.from({ length: spec.random.n }, (_, i) => randomSample(spec.random!, i)) : [{}];
  const points = grid.flatMap((g) => samples.map((s) => ({ ...g, ...s })));
  const kept = spec.max_runs != null ? points.slice(0, spec.max_runs) : points;
  const width = String(Math.max(kept.length - 1, 0)).length;
  return kept.map((params, index) => ({ index, params, name: pointName(index, params, width) }));
}

function formatValue(v: unknown): string {
  if (typeof v === 'number' && !Number.isInteger(v)) return String(Number(v.toPrecision(4)));
  return typeof v === 'string' ? v : JSON.stringify(v);
}

const NAME_LIMIT = 120;

/** The reference's default_run_name (`key=value_…`), prefixed by the index and kept path-safe. */
export function pointName(index: number, params: Record<string, unknown>, width = 3): string {
  const body = Object.entries(params)
    .map(([k, v]) => `${k}=${formatValue(v)}`)
    .join('_')
    .replace(/[^A-Za-z0-9_.=+-]+/g, '-');
  const prefix = String(index).padStart(Math.max(width, 3), '0');
  return (body ? `${prefix}-${body}` : prefix).slice(0, NAME_LIMIT);
}

/** Sets a dotted key in a copy of `config` (objects and arrays on the way are copied, never shared; a numeric key indexes an array). */
export function withParam(config: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  return setPath(config, key.split('.'), value) as Record<string, unknown>;
}

function setPath(target: unknown, keys: string[], value: unknown): unknown {
  if (keys.length === 0) return value;
  const [head, ...rest] = keys;
  if (Array.isArray(target) && /^\d+$/.test(head)) {
    const copy = [...target];
    copy[Number(head)] = setPath(copy[Number(head)], rest, value);
    return copy;
  }
  const obj = target !== null && typeof target === 'object' && !Array.isArray(target) ? (target as Record<string, unknown>) : {};
  return { ...obj, [head]: setPath(obj[head], rest, value) };
}

/**
 * A pipeline sweep's keys address a stage's config as `stages.<index>.<config key>`; in the
 * resolved pipeline config that is `stages.<index>.config.<config key>`. Undefined for another key.
 */
export function pipelineStageKey(key: string): { stage: number; configKey: string; path: string } | undefined {
  const m = /^stages\.(\d+)\.(.+)$/.exec(key);
  return m ? { stage: Number(m[1]), configKey: m[2], path: `stages.${m[1]}.config.${m[2]}` } : undefined;
}

/** A point's values as paths of the config the point runs (a pipeline's keys moved into its stages' configs). */
export function paramPaths(kind: string, params: Record<string, unknown>): Record<string, unknown> {
  if (kind !== 'pipeline') return params;
  return Object.fromEntries(Object.entries(params).map(([k, v]) => [pipelineStageKey(k)?.path ?? k, v]));
}

/** The config a point runs: the resolved base with the point's values. */
export function pointConfig(kind: string, base: Record<string, unknown>, params: Record<string, unknown>): Record<string, unknown> {
  return withParams(base, paramPaths(kind, params));
}

/**
 * Where a point's ranking metric is logged, relative to its log dir: a pipeline point's
 * `metric_stage` (default: the last stage) writes to `<index>-<kind>`; other points to their own dir.
 */
export function metricSubdir(cfg: { kind: string; metric_stage?: number | null; base?: Record<string, unknown> }): string | undefined {
  if (cfg.kind !== 'pipeline') return undefined;
  const stages = (cfg.base?.stages ?? []) as Array<{ kind: string }>;
  const index = cfg.metric_stage ?? stages.length - 1;
  return stages[index] ? `${index}-${stages[index].kind}` : undefined;
}

/**
 * `cookbook set` values a point started after the set takes from its config: eval_every and
 * save_every (in every stage of a pipeline that has them). lr_multiplier is not carried over — a
 * later point's learning rate is the swept value; the multiplier corrects the runs going now.
 */
export function withHotSettings(kind: string, config: Record<string, unknown>, hot: { eval_every?: number; save_every?: number }): Record<string, unknown> {
  const carried = Object.fromEntries(Object.entries(hot).filter(([k, v]) => (k === 'eval_every' || k === 'save_every') && v !== undefined));
  if (Object.keys(carried).length === 0) return config;
  const apply = (c: Record<string, unknown>) => ({ ...c, ...Object.fromEntries(Object.entries(carried).filter(([k]) => k in c)) });
  if (kind !== 'pipeline') return apply(config);
  const stages = config.stages as Array<{ config: Record<string, unknown> }>;
  return { ...config, stages: stages.map((s) => ({ ...s, config: apply(s.config) })) };
}

export function withParams(config: Record<string, unknown>, params: Record<string, unknown>): Record<string, unknown> {
  return Object.entries(params).reduce((c, [k, v]) => withParam(c, k, v), config);
}

/** Of the finished points with a value, the best one by `mode` (the first on ties); undefined if none. */
export function bestIndex(rows: ReadonlyArray<{ index: number; value: number | null }>, mode: 'min' | 'max'): number | undefined {
  let best: { index: number; value: number } | undefined;
  for (const r of rows) {
    if (r.value === null || !Number.isFinite(r.value)) continue;
    if (!best || (mode === 'min' ? r.value < best.value : r.value > best.value)) best = { index: r.index, value: r.value };
  }
  return best?.index;
}
