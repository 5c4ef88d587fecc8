// A sweep whose points are pipelines: the base is a pipeline config (resolved as `cookbook train
// pipeline` resolves it: every stage validated with its kind's schema) and each sweep key addresses
// one stage's config as `stages.<index>.<config key>` (e.g. `stages.1.dpo_beta`). Every point's
// changed stages are validated with their schemas here, so a bad value fails before anything trains;
// errors name the sweep key (`grid.stages.1.dpo_beta`) and, for the base, the pipeline file.
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { localIsoDate } from '../renderers/gpt-oss.js';
import { applyOverrides, ConfigError, formatZodError } from './overrides.js';
import { PIPELINE_STAGE_KINDS } from './pipeline-kinds.js';
import { resolvePipelineStages, type ResolvedStage } from './pipeline.js';
import { axisOf, canonical, MAX_SWEEP_POINTS, type SweepConfig, type SweepResolver } from './sweep.js';
import { expandPoints, pipelineStageKey, withParam, type SweepPoint } from './sweep-points.js';

/** Stage keys the pipeline itself sets or that must agree across stages. */
const NOT_SWEPT: Record<string, string> = {
  log_path: 'set by the pipeline (<point log dir>/<index>-<kind>)',
  load_checkpoint_path: "set by the pipeline (the starting stage's final checkpoint)",
  model_name: "each stage trains the previous stage's weights, so the stages' model_name must agree; sweep it with one pipeline config per model",
};

export function resolvePipelineSweep(cfg: SweepConfig, baseDir: string, r: SweepResolver, source?: string): SweepPoint[] {
  const where = source ? `${source}: ` : '';
  const file = cfg.base_file && (isAbsolute(cfg.base_file) ? cfg.base_file : resolve(baseDir, cfg.base_file));
  const rawBase = applyOverrides(file ? r.readConfigFile(file) : cfg.base!, cfg.overrides);
  delete rawBase.run_name; // the points are named by their values
  if (rawBase.log_path !== undefined) throw new ConfigError(`${where}base.log_path: set by the sweep (<sweep log_path>/<point name>); remove it`);
  const parsed = r.schemaOf('pipeline').safeParse(rawBase);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({ ...issue, path: file ? issue.path : ['base', ...issue.path] }));
    throw new ConfigError(formatZodError(new z.ZodError(issues), file ?? source));
  }
  const base = parsed.data as Record<string, any>;
  const stageSchema = (kind: string) => ((PIPELINE_STAGE_KINDS as readonly string[]).includes(kind) ? r.schemaOf(kind) : undefined);
  resolvePipelineStages(base as any, file ? dirname(file) : baseDir, { kinds: [...PIPELINE_STAGE_KINDS], schemaOf: stageSchema, readConfigFile: r.readConfigFile, resolvePaths: r.resolvePaths }, file ?? source);
  const stages = base.stages as ResolvedStage[];

  if (cfg.metric_stage !== null && cfg.metric_stage >= stages.length) {
    throw new ConfigError(`${where}metric_stage: ${cfg.metric_stage} is not a stage of the pipeline (stages 0–${stages.length - 1})`);
  }
  for (const key of [...Object.keys(cfg.grid ?? {}), ...Object.keys(cfg.random?.space ?? {})]) checkKey(cfg, key, stages, where);

  const points = expandPoints(cfg);
  if (points.length > MAX_SWEEP_POINTS) throw new ConfigError(`${where}grid: ${points.length} points; a sweep holds at most ${MAX_SWEEP_POINTS} (set max_runs or split it)`);
  for (const point of points) checkPoint(cfg, point, stages, stageSchema, r, file ? dirname(file) : baseDir, where);

  // One date for every stage of every point, whatever day a step is rebuilt on.
  const today = localIsoDate();
  for (const s of stages) if ('render_date' in s.config && s.config.render_date === null) s.config.render_date = today;
  delete base.log_path;
  cfg.base = base;
  cfg.base_file = undefined;
  cfg.overrides = [];
  cfg.model_name = String(base.model_name);
  return points;
}

function checkKey(cfg: SweepConfig, key: string, stages: ResolvedStage[], where: string): void {
  const at = `${where}${axisOf(cfg, key)}`;
  const target = pipelineStageKey(key);
  if (!target) throw new ConfigError(`${at}: a pipeline sweep key names a stage's config key as stages.<index>.<key> (e.g. stages.${stages.length - 1}.learning_rate)`);
  if (target.stage >= stages.length) throw new ConfigError(`${at}: the pipeline has no stage ${target.stage} (stages 0–${stages.length - 1})`);
  const top = target.configKey.split('.')[0];
  if (NOT_SWEPT[top]) throw new ConfigError(`${at}: ${NOT_SWEPT[top]}`);
}

/** The point's changed stages, validated with their schemas; the same whether set before or after resolution. */
function checkPoint(cfg: SweepConfig, point: SweepPoint, stages: ResolvedStage[], schemaOf: (kind: string) => z.ZodType | undefined, r: SweepResolver, baseDir: string, where: string): void {
  const byStage = new Map<number, Array<[string, string, unknown]>>();
  for (const [key, value] of Object.entries(point.params)) {
    const { stage, configKey } = pipelineStageKey(key)!;
    byStage.set(stage, [...(byStage.get(stage) ?? []), [key, configKey, value]]);
  }
  for (const [index, params] of byStage) {
    const { kind, config } = stages[index];
    const changed = params.reduce((c, [, configKey, value]) => withParam(c, configKey, value), config);
    const parsed = schemaOf(kind)!.safeParse(changed);
    const axes = params.map(([key]) => axisOf(cfg, key));
    if (!parsed.success) {
      const lines = parsed.error.issues.flatMap((issue) => {
        const path = issue.path.join('.');
        const hits = issue.code === 'unrecognized_keys'
          ? params.filter(([, k]) => issue.keys.some((u) => (path ? `${path}.${u}` : u) === k))
          : params.filter(([, k]) => path === k || path.startsWith(`${k}.`));
        if (hits.length === 0) return [`${where}${axes.join(', ')} (point ${point.name}): stages.${index}.config.${path}: ${issue.message}`];
        if (issue.code === 'unrecognized_keys') return hits.map(([key]) => `${where}${axisOf(cfg, key)}: not a config key of stage ${index} (${kind})`);
        return hits.map(([key, , value]) => `${where}${axisOf(cfg, key)}: value ${JSON.stringify(value)} (point ${point.name}): ${issue.message}`);
      });
      throw new ConfigError([...new Set(lines)].join('\n'));
    }
    const resolved = parsed.data as Record<string, unknown>;
    try {
      r.resolvePaths(resolved, baseDir);
    } catch (err) {
      throw new ConfigError(`${where}${axes.join(', ')} (point ${point.name}): ${(err as Error).message}`);
    }
    if (canonical(resolved) !== canonical(changed)) {
      throw new ConfigError(`${where}${axes.join(', ')}: point ${point.name} changes when stage ${index}'s config is resolved (a relative path, or a value the schema rewrites); give the values as resolved`);
    }
  }
}
