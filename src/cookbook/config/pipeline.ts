// A pipeline config: stages run one after another as child workflows, each starting from the
// previous stage's final checkpoint. Each stage's config is validated with its own kind's schema
// when the pipeline is resolved (errors name e.g. `stages.1.config.learning_rate`), so a typo in
// the last stage fails before the first one trains.
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { RunNameSchema } from './common.js';
import { applyOverrides, ConfigError, formatZodError } from './overrides.js';
import { findStageRefs, initSource, type InitFrom } from './pipeline-refs.js';
import { captureRefusal } from '../../capture/run-config.js';

export const PipelineStageSchema = z
  .strictObject({
    kind: z.string().min(1),
    /** The stage's config inline… */
    config: z.record(z.string(), z.unknown()).optional(),
    /** …or in a JSON file (relative to the pipeline config); its relative paths resolve against its own folder. */
    config_file: z.string().min(1).optional(),
    /** `key=value` overrides applied to the stage's config before validation. */
    overrides: z.array(z.string()).default([]),
    /** Whose final weights the stage starts from: the previous stage (default), the base model, or stage <index>. */
    init_from: z.union([z.enum(['previous', 'base']), z.int().nonnegative()]).default('previous'),
  })
  .superRefine((stage, ctx) => {
    if ((stage.config === undefined) === (stage.config_file === undefined)) {
      ctx.addIssue({ code: 'custom', path: stage.config === undefined ? ['config'] : ['config_file'], message: 'set exactly one of config and config_file' });
    }
  });

export const PipelineConfigSchema = z.strictObject({
  log_path: z.string().min(1).optional(),
  run_name: RunNameSchema,
  /** Filled in from the stages (they must agree): each stage loads the previous one's weights. */
  model_name: z.string().min(1).optional(),
  stages: z.array(PipelineStageSchema).min(1),
});
export type PipelineConfig = z.output<typeof PipelineConfigSchema>;

/** A stage after resolution: its kind and its complete, validated config. */
export interface ResolvedStage {
  kind: string;
  config: Record<string, unknown>;
  /** Absent in pipelines resolved before stages could start elsewhere: "previous". */
  init_from?: InitFrom;
}

export interface StageResolver {
  /** Schemas of the kinds a stage may have. */
  schemaOf(kind: string): z.ZodType | undefined;
  kinds: string[];
  readConfigFile(path: string): Record<string, unknown>;
  /** Makes the config's file paths absolute against `baseDir` (as for a top-level run). */
  resolvePaths(cfg: Record<string, unknown>, baseDir: string): void;
}

/**
 * A stage's `dataset.file_path` that the pipeline fills in with the file the previous stage wrote
 * (teacher sampling → SFT: the previous stage is a distill run in mode off_policy_sample).
 */
export const FROM_PREVIOUS_STAGE = '@previous_stage';

const writesConversations = (stage: ResolvedStage | undefined) =>
  (stage?.kind === 'distill' && stage.config.mode === 'off_policy_sample') || stage?.kind === 'prompt_distill';

/** Keys the pipeline sets on each stage itself. */
const SET_BY_PIPELINE = ['log_path'];

/** Replaces every stage by its resolved form (in place) and fills in `model_name`. */
export function resolvePipelineStages(cfg: PipelineConfig, baseDir: string, r: StageResolver, source?: string): void {
  const where = source ? `${source}: ` : '';
  const resolved: ResolvedStage[] = [];
  cfg.stages.forEach((stage, i) => {
    const at = `stages.${i}`;
    const schema = r.schemaOf(stage.kind);
    if (!schema) throw new ConfigError(`${where}${at}.kind: unknown stage kind "${stage.kind}" (available: ${r.kinds.join(', ')})`);
    const file = stage.config_file && (isAbsolute(stage.config_file) ? stage.config_file : resolve(baseDir, stage.config_file));
    const raw = applyOverrides(file ? r.readConfigFile(file) : stage.config!, stage.overrides);
    for (const key of SET_BY_PIPELINE) {
      if (raw[key] !== undefined) throw new ConfigError(`${where}${at}.config.${key}: set by the pipeline (<pipeline log_path>/<index>-<kind>); remove it`);
    }
    if (typeof stage.init_from === 'number' && stage.init_from >= i) {
      throw new ConfigError(`${where}${at}.init_from: ${stage.init_from} is not an earlier stage (stage ${i} can start from stages 0–${i - 1}, "previous" or "base")`);
    }
    const startsFrom = initSource(i, stage.init_from);
    if (startsFrom !== null && startsFrom !== i - 1 && writesConversations(resolved[startsFrom])) {
      throw new ConfigError(`${where}${at}.init_from: stage ${startsFrom} samples teacher conversations and trains no weights to start from`);
    }
    if (i > 0 && stage.init_from !== 'base' && raw.load_checkpoint_path != null) {
      throw new ConfigError(`${where}${at}.config.load_checkpoint_path: set by the pipeline (the previous stage's final checkpoint); remove it`);
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((issue) => ({ ...issue, path: ['stages', i, 'config', ...issue.path] }));
      throw new ConfigError(formatZodError(new z.ZodError(issues), file ?? source));
    }
    const config = parsed.data as Record<string, any>;
    const refusal = captureRefusal(stage.kind, config.capture);
    if (refusal) throw new ConfigError(`${where}${at}.config.${refusal}`);
    const fed = config.dataset?.file_path === FROM_PREVIOUS_STAGE;
    if (fed !== writesConversations(resolved[i - 1])) {
      throw new ConfigError(
        fed
          ? `${where}${at}.config.dataset.file_path: "${FROM_PREVIOUS_STAGE}" needs a previous stage that writes conversations (a distill stage with mode off_policy_sample, or a prompt_distill stage)`
          : `${where}${at}.config.dataset.file_path: stage ${i - 1} writes teacher conversations; set "${FROM_PREVIOUS_STAGE}" to train on them`,
      );
    }
    for (const found of findStageRefs(config)) {
      const loc = `${where}${at}.config.${found.path.join('.')}`;
      if (!found.ref) throw new ConfigError(`${loc}: "${found.text}" is not a stage reference; write "@stage:<index>/sampler" or "@stage:<index>/state"`);
      if (found.ref.stage >= i) throw new ConfigError(`${loc}: "${found.text}" refers to stage ${found.ref.stage}, which does not finish before stage ${i}`);
      if (writesConversations(resolved[found.ref.stage])) throw new ConfigError(`${loc}: stage ${found.ref.stage} samples teacher conversations and saves no weights`);
    }
    r.resolvePaths(config, file ? dirname(file) : baseDir);
    resolved.push({ kind: stage.kind, config, init_from: stage.init_from });
  });
  const model = resolved[0].config.model_name;
  resolved.forEach((stage, i) => {
    if (writesConversations(resolved[i - 1])) return; // trains a fresh model on the teacher's traces
    if (stage.config.model_name !== model) {
      throw new ConfigError(`${where}stages.${i}.config.model_name: ${String(stage.config.model_name)} differs from stage 0's ${String(model)}; each stage trains the previous stage's weights`);
    }
  });
  if (cfg.model_name !== undefined && cfg.model_name !== model) throw new ConfigError(`${where}model_name: ${cfg.model_name} differs from the stages' ${String(model)}`);
  cfg.model_name = model as string;
  cfg.stages = resolved.map((s) => ({ ...s, overrides: [], init_from: s.init_from ?? 'previous' }));
}
