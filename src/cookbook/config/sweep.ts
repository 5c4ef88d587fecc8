// A hyper-parameter sweep config: a base training config of one paradigm, a grid and/or a random
// search over its dotted keys, how many points train at once, and the metric that picks the best.
// Every point is validated with the paradigm's schema when the sweep is resolved, so a bad value
// in the last point fails before the first one trains; errors name the sweep key (`grid.lora_rank`).
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { RunNameSchema } from './common.js';
import { applyOverrides, ConfigError, formatZodError } from './overrides.js';
import { PIPELINE_STAGE_KINDS } from './pipeline-kinds.js';
import { expandPoints, withParams, type SweepPoint } from './sweep-points.js';
import { resolvePipelineSweep } from './sweep-pipeline.js';

/** Past this the sweep's results table would outgrow a Temporal payload; split the sweep. */
export const MAX_SWEEP_POINTS = 1000;

const Range = z.tuple([z.number(), z.number()]).refine(([lo, hi]) => lo < hi, 'give [low, high] with low < high');

export const DistributionSchema = z.union([
  z.strictObject({ uniform: Range }),
  z.strictObject({ log_uniform: Range.refine(([lo]) => lo > 0, 'log_uniform needs low > 0') }),
  z.strictObject({ choice: z.array(z.unknown()).min(1) }),
]);

export const SweepConfigSchema = z
  .strictObject({
    log_path: z.string().min(1).optional(),
    run_name: RunNameSchema,
    /** The paradigm every point trains, or "pipeline": each point a pipeline, keys `stages.<index>.<config key>`. */
    kind: z.enum([...PIPELINE_STAGE_KINDS, 'pipeline']),
    /** The base training config inline… */
    base: z.record(z.string(), z.unknown()).optional(),
    /** …or in a JSON file (relative to the sweep config); its relative paths resolve against its own folder. */
    base_file: z.string().min(1).optional(),
    /** `key=value` overrides applied to the base before the points. */
    overrides: z.array(z.string()).default([]),
    /** Dotted config key → values; every combination is a point. */
    grid: z.record(z.string(), z.array(z.unknown()).min(1, 'give at least one value')).optional(),
    /** `n` samples of `space`, from a PRNG seeded by `seed` (crossed with the grid when both are set). */
    random: z
      .strictObject({
        n: z.int().positive(),
        seed: z.int().nonnegative().default(0),
        space: z.record(z.string(), DistributionSchema).refine((s) => Object.keys(s).length > 0, 'give at least one key'),
      })
      .optional(),
    /** Points training at the same time (the reference's max_parallel). */
    max_concurrent: z.int().positive().default(1),
    /** The metrics.jsonl key that ranks the points (its last logged value in each run). */
    metric: z.string().min(1).default('train_mean_nll'),
    mode: z.enum(['min', 'max']).default('min'),
    /** A pipeline sweep: the stage whose metrics rank the points and whose curves the report overlays (default: the last). */
    metric_stage: z.int().nonnegative().nullable().default(null),
    /** Runs only the first `max_runs` points. */
    max_runs: z.int().positive().nullable().default(null),
    /** Continue-as-new after starting this many points in one workflow run (bounded history). */
    points_per_workflow_run: z.int().positive().default(100),
    /** Filled in from the base config. */
    model_name: z.string().min(1).optional(),
  })
  .superRefine((cfg, ctx) => {
    if ((cfg.base === undefined) === (cfg.base_file === undefined)) {
      ctx.addIssue({ code: 'custom', path: cfg.base === undefined ? ['base'] : ['base_file'], message: 'set exactly one of base and base_file' });
    }
    if (cfg.metric_stage !== null && cfg.kind !== 'pipeline') ctx.addIssue({ code: 'custom', path: ['metric_stage'], message: 'only a pipeline sweep has stages' });
    if (!cfg.grid && !cfg.random) ctx.addIssue({ code: 'custom', path: ['grid'], message: 'a sweep needs a grid, a random search, or both' });
    for (const key of Object.keys(cfg.random?.space ?? {})) {
      if (cfg.grid && key in cfg.grid) ctx.addIssue({ code: 'custom', path: ['random', 'space', key], message: 'already a grid key: sweep a key in one way' });
    }
  });
export type SweepConfig = z.output<typeof SweepConfigSchema>;

/** A sweep after resolution: the base is the paradigm's complete, validated config. */
export type ResolvedSweepConfig = SweepConfig & { base: Record<string, unknown>; model_name: string };

export interface SweepResolver {
  schemaOf(kind: string): z.ZodType;
  readConfigFile(path: string): Record<string, unknown>;
  /** Makes the config's file paths absolute against `baseDir` (as for a top-level run). */
  resolvePaths(cfg: Record<string, unknown>, baseDir: string): void;
}

/** Keys the sweep sets on each point itself. */
const SET_BY_SWEEP = ['log_path', 'run_name'];

export const axisOf = (cfg: SweepConfig, key: string) => (cfg.grid && key in cfg.grid ? `grid.${key}` : `random.space.${key}`);

/** The sweep keys an issue of a point's config is about, if any (else it is the base's problem). */
function issueKeys(issue: z.core.$ZodIssue, keys: string[]): string[] {
  const path = issue.path.join('.');
  if (issue.code === 'unrecognized_keys') return issue.keys.map((k) => (path ? `${path}.${k}` : k)).filter((k) => keys.includes(k));
  return keys.filter((k) => path === k || path.startsWith(`${k}.`));
}

/** Replaces `base`/`base_file` by the resolved base config (in place) and fills in `model_name`. */
export function resolveSweep(cfg: SweepConfig, baseDir: string, r: SweepResolver, source?: string): SweepPoint[] {
  if (cfg.kind === 'pipeline') return resolvePipelineSweep(cfg, baseDir, r, source);
  const where = source ? `${source}: ` : '';
  const schema = r.schemaOf(cfg.kind);
  const file = cfg.base_file && (isAbsolute(cfg.base_file) ? cfg.base_file : resolve(baseDir, cfg.base_file));
  const rawBase = applyOverrides(file ? r.readConfigFile(file) : cfg.base!, cfg.overrides);
  const keys = [...Object.keys(cfg.grid ?? {}), ...Object.keys(cfg.random?.space ?? {})];
  // A base file's run name names nothing here: the points are named by their values.
  delete rawBase.run_name;
  for (const key of SET_BY_SWEEP) {
    if (rawBase[key] !== undefined) throw new ConfigError(`${where}base.${key}: set by the sweep (<sweep log_path>/<point name>); remove it`);
    if (keys.includes(key)) throw new ConfigError(`${where}${axisOf(cfg, key)}: set by the sweep; it cannot be swept`);
  }
  const parsed = schema.safeParse(rawBase);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({ ...issue, path: file ? issue.path : ['base', ...issue.path] }));
    throw new ConfigError(formatZodError(new z.ZodError(issues), file ?? source));
  }
  const base = parsed.data as Record<string, unknown>;
  r.resolvePaths(base, file ? dirname(file) : baseDir);

  const points = expandPoints(cfg);
  if (points.length > MAX_SWEEP_POINTS) throw new ConfigError(`${where}grid: ${points.length} points; a sweep holds at most ${MAX_SWEEP_POINTS} (set max_runs or split it)`);
  for (const point of points) checkPoint(cfg, point, rawBase, base, schema, r, file ? dirname(file) : baseDir, where);

  cfg.base = base;
  cfg.base_file = undefined;
  cfg.overrides = [];
  cfg.model_name = String(base.model_name);
  return points;
}

/** A point's config is the base with its values: valid for the paradigm, and the same whether the values are set before or after resolution. */
function checkPoint(cfg: SweepConfig, point: SweepPoint, rawBase: Record<string, unknown>, base: Record<string, unknown>, schema: z.ZodType, r: SweepResolver, baseDir: string, where: string): void {
  const keys = Object.keys(point.params);
  const parsed = schema.safeParse(withParams(rawBase, point.params));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const hit = issueKeys(issue, keys);
      if (hit.length === 0) return formatZodError(new z.ZodError([{ ...issue, path: ['base', ...issue.path] }]), where.slice(0, -2) || undefined);
      if (issue.code === 'unrecognized_keys') return hit.map((k) => `${where}${axisOf(cfg, k)}: not a config key of a ${cfg.kind} run`).join('\n');
      return hit.map((k) => `${where}${axisOf(cfg, k)}: value ${JSON.stringify(point.params[k])} (point ${point.name}): ${issue.message}`).join('\n');
    });
    throw new ConfigError([...new Set(lines)].join('\n'));
  }
  const resolved = parsed.data as Record<string, unknown>;
  const axes = keys.map((k) => axisOf(cfg, k)).join(', ');
  try {
    r.resolvePaths(resolved, baseDir);
  } catch (err) {
    throw new ConfigError(`${where}${axes} (point ${point.name}): ${(err as Error).message}`);
  }
  // The workflow sets the values on the resolved base: that must be exactly what was validated.
  if (canonical(resolved) !== canonical(withParams(base, point.params))) {
    throw new ConfigError(`${where}${axes}: point ${point.name} changes when its config is resolved (a relative path, or a value the schema rewrites); give the values as resolved`);
  }
}

/** JSON with object keys sorted, to compare configs whatever order their keys were set in. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v));
}
