// `cookbook train <kind> <config.json> [key=value …]`: resolve and validate the config, check the
// backend serves the model, start the workflow with a readable id, memo and search attributes.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, resolve } from 'node:path';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { z } from 'zod';
import { ConfigError, parseWithOverrides } from '../cookbook/config/overrides.js';
import { DistillConfigSchema } from '../cookbook/config/distill.js';
import { OffPolicyDistillConfigSchema } from '../cookbook/config/distill-off-policy.js';
import { DecisionsConfigSchema } from '../cookbook/config/decisions.js';
import { DPOConfigSchema } from '../cookbook/config/dpo.js';
import { PromptDistillConfigSchema } from '../cookbook/config/prompt-distill.js';
import { SDFTConfigSchema } from '../cookbook/config/sdft.js';
import { loadSDFTData } from '../cookbook/distillation/sdft-data.js';
import { queriesFile, readQueries } from '../cookbook/distillation/prompt-distillation-queries.js';
import { FROM_PREVIOUS_STAGE, PipelineConfigSchema, resolvePipelineStages } from '../cookbook/config/pipeline.js';
import { PIPELINE_STAGE_KINDS } from '../cookbook/config/pipeline-kinds.js';
import { resolveSweep, SweepConfigSchema } from '../cookbook/config/sweep.js';
import { expandPoints, withParams } from '../cookbook/config/sweep-points.js';
import { checkEvaluatorData, type EvaluatorConfig } from '../cookbook/eval/custom-sampling.js';
import { benchmarkDataPath } from '../cookbook/eval/benchmark-data.js';
import { isLocalPath } from '../cookbook/hf/source.js';
import { buildPreferenceDatasets } from '../cookbook/preference/dataset.js';
import { RLConfigSchema } from '../cookbook/config/rl.js';
import { buildRLDatasets } from '../cookbook/rl/datasets.js';
import { buildChatDatasets } from '../cookbook/supervised/dataset.js';
import { batchesPerEpoch, loadDecisionsData } from '../cookbook/supervised/decisions/run-data.js';
import { SupervisedConfigSchema } from '../cookbook/config/sl.js';
import type { RunKind, RunRef } from '../cookbook/run-store.js';
import { checkLogPathFree, checkRunStore, runLogPath } from '../cookbook/stores/run-location.js';
import { localIsoDate } from '../cookbook/renderers/gpt-oss.js';
import { rendererNotRecommendedWarning } from '../cookbook/renderers/registry.js';
import { apiKeyFor, DEFAULT_TASK_QUEUE } from '../workers/worker.js';
import { KindKey, ModelKey, StatusKey, StepKey } from '../workflows/shared/search-attributes.js';
import { captureRefusal } from '../capture/run-config.js';

export interface TrainableKind {
  schema: z.ZodType;
  workflowType: string;
  describe: (cfg: any) => string;
  /** Loads the run's data as its first step will, so bad data fails here, before any run exists; says how many steps it makes where that is known here. */
  checkData?: (cfg: any) => Promise<DataPlan | void>;
  /** Completes the parsed config (paths relative to the config file's folder); default: resolvePaths. */
  resolve?: (cfg: any, baseDir: string, source: string) => void;
}

export const TRAINABLE_KINDS: Record<string, TrainableKind> = {
  sl: {
    schema: SupervisedConfigSchema,
    workflowType: 'supervisedWorkflow',
    checkData: async (cfg) => {
      const { train, test } = await buildChatDatasets(cfg.dataset, cfg);
      train.setEpoch(0);
      await train.loadBatch(0);
      train.getBatch(0);
      await test?.loadBatch(0);
      test?.getBatch(0);
      await checkEvaluators(cfg);
      return epochPlan(train.length, cfg);
    },
    describe: (cfg) => `supervised fine-tune of ${cfg.model_name} on ${datasetLabel(cfg.dataset)}`,
  },
  rl: {
    schema: RLConfigSchema,
    workflowType: 'rlWorkflow',
    checkData: async (cfg) => {
      const { train } = await buildRLDatasets(cfg.dataset, cfg);
      if (train.length === 0) throw new Error('the RL dataset has no batches');
      await checkEvaluators(cfg);
      // An async run's steps take another number of groups than a batch holds: counted by the run.
      if (!cfg.async_config) return epochPlan(train.length, { num_epochs: cfg.num_epochs ?? 1, max_steps: cfg.max_steps });
    },
    describe: (cfg) => `RL of ${cfg.model_name} on ${cfg.dataset.kind === 'custom' ? cfg.dataset.name : cfg.dataset.kind}${cfg.async_config ? ` (async, ≤${cfg.async_config.max_steps_off_policy} steps off-policy)` : ''}`,
  },
  distill: {
    schema: DistillConfigSchema,
    workflowType: 'distillWorkflow',
    checkData: (cfg) => checkEvaluators(cfg),
    describe: (cfg) =>
      `${cfg.mode === 'off_policy_sample' ? 'teacher sampling for off-policy distillation' : `on-policy distillation of ${cfg.model_name}`} from ${cfg.dataset_configs.map((d: any) => d.teacher_config.load_checkpoint_path ?? d.teacher_config.base_model).join(', ')}`,
  },
  distill_off_policy: {
    schema: OffPolicyDistillConfigSchema,
    workflowType: 'offPolicyDistillWorkflow',
    checkData: async (cfg) => {
      const lengths: number[] = [];
      for (const dc of cfg.dataset_configs) {
        const { train } = await buildChatDatasets(dc.dataset, cfg);
        await train.loadBatch(0);
        train.getBatch(0);
        lengths.push(train.length);
      }
      await checkEvaluators(cfg);
      const batches = Math.min(...lengths);
      return { steps: Math.min(batches, cfg.max_steps ?? Infinity), batches, epochs: 1 };
    },
    describe: (cfg) =>
      `off-policy distillation of ${cfg.model_name} on the top-${cfg.n_teacher_targets} tokens of ${cfg.dataset_configs.map((d: any) => d.teacher_config.load_checkpoint_path ?? d.teacher_config.base_model).join(', ')}`,
  },
  sdft: {
    schema: SDFTConfigSchema,
    workflowType: 'sdftWorkflow',
    checkData: async (cfg) => {
      const { train } = await loadSDFTData(cfg.dataset);
      if (train.questions.length === 0) throw new Error(`dataset.file_path: ${cfg.dataset.file_path} leaves no training questions`);
      await checkEvaluators(cfg);
      const batches = Math.ceil(train.questions.length / cfg.dataset.groups_per_batch);
      return { steps: Math.min(batches, cfg.max_steps ?? Infinity), batches, epochs: 1 };
    },
    describe: (cfg) =>
      `SDFT of ${cfg.model_name} on ${cfg.dataset.kind} (${cfg.topk > 0 ? `top-${cfg.topk} ${cfg.reverse ? 'reverse' : 'forward'} KL` : `importance sampling, ${cfg.loss_fn}`})`,
  },
  prompt_distill: {
    schema: PromptDistillConfigSchema,
    workflowType: 'promptDistillWorkflow',
    checkData: async (cfg) => {
      readQueries(cfg);
    },
    describe: (cfg) => `prompt distillation data from ${cfg.load_checkpoint_path ?? cfg.model_name} on ${queriesFile(cfg)}`,
  },
  dpo: {
    schema: DPOConfigSchema,
    workflowType: 'dpoWorkflow',
    checkData: async (cfg) => {
      const { train, test } = await buildPreferenceDatasets(cfg.dataset, cfg);
      train.setEpoch(0);
      await train.loadBatch(0);
      train.getBatch(0);
      test?.getBatch(0);
      await checkEvaluators(cfg);
      return epochPlan(train.length, cfg);
    },
    describe: (cfg) => `DPO of ${cfg.model_name} on ${datasetLabel(cfg.dataset)} (β=${cfg.dpo_beta}, reference: ${cfg.reference_model.kind})`,
  },
  decisions: {
    schema: DecisionsConfigSchema,
    workflowType: 'decisionsWorkflow',
    resolve: (cfg, baseDir) => {
      resolvePaths(cfg, baseDir);
      for (const key of ['data_path', 'validation_data_path']) {
        if (typeof cfg[key] !== 'string') continue;
        cfg[key] = resolve(baseDir, cfg[key]);
        if (!existsSync(cfg[key])) throw new ConfigError(`${key}: ${cfg[key]} does not exist`);
      }
    },
    checkData: async (cfg) => {
      const { train } = await loadDecisionsData(cfg);
      const batches = batchesPerEpoch(train.length, cfg.batch_size);
      return { steps: Math.min(batches * cfg.epochs, cfg.max_steps ?? Infinity), batches, epochs: cfg.epochs };
    },
    describe: (cfg) => `decision model ${cfg.model_name} on ${cfg.data_path}${cfg.loss_fn ? ` (${cfg.loss_fn})` : ''}`,
  },
  pipeline: {
    schema: PipelineConfigSchema,
    workflowType: 'pipelineWorkflow',
    resolve: (cfg, baseDir, source) =>
      resolvePipelineStages(cfg, baseDir, {
        kinds: [...PIPELINE_STAGE_KINDS],
        schemaOf: (kind) => ((PIPELINE_STAGE_KINDS as readonly string[]).includes(kind) ? TRAINABLE_KINDS[kind]?.schema : undefined),
        readConfigFile,
        resolvePaths,
      }, source),
    checkData: async (cfg) => {
      // A stage fed by the previous stage's output has no data yet; the pipeline checked the link.
      for (const stage of cfg.stages) if (stage.config.dataset?.file_path !== FROM_PREVIOUS_STAGE) await TRAINABLE_KINDS[stage.kind].checkData?.(stage.config);
    },
    describe: (cfg) => `pipeline of ${cfg.model_name}: ${cfg.stages.map((s: any) => s.kind).join(' → ')}`,
  },
  sweep: {
    schema: SweepConfigSchema,
    workflowType: 'sweepWorkflow',
    resolve: (cfg, baseDir, source) => {
      resolveSweep(cfg, baseDir, { schemaOf: (kind) => TRAINABLE_KINDS[kind].schema, readConfigFile, resolvePaths }, source);
      if (cfg.base.render_date === null) cfg.base.render_date = localIsoDate(); // one date for every point
    },
    // The base's data; a point that sweeps a dataset key reads it with its own values.
    checkData: async (cfg) => {
      const check = TRAINABLE_KINDS[cfg.kind].checkData;
      await check?.(cfg.base);
      for (const p of expandPoints(cfg)) if (Object.keys(p.params).some((k) => k.startsWith('dataset.') || k === 'dataset')) await check?.(withParams(cfg.base, p.params));
    },
    describe: (cfg) => `sweep of ${cfg.kind} on ${cfg.model_name}: ${[...Object.keys(cfg.grid ?? {}), ...Object.keys(cfg.random?.space ?? {})].join(', ')} by ${cfg.metric} (${cfg.mode})`,
  },
};

/** How many steps a run makes: its workflow's count (batches × epochs, at most max_steps). */
export interface DataPlan {
  steps: number;
  batches: number;
  epochs: number;
}

const epochPlan = (batches: number, cfg: { num_epochs: number; max_steps?: number | null }): DataPlan => ({
  steps: Math.min(batches * cfg.num_epochs, cfg.max_steps ?? Infinity),
  batches,
  epochs: cfg.num_epochs,
});

/** What a dataset config reads, for the run's description. */
function datasetLabel(dataset: {
  file_path?: string;
  builtin?: string;
  hf?: { path: string; name: string | null; split: string };
  vlm_classifier?: { dataset: string | null };
  sources?: Array<{ path: string }>;
}): string {
  if (dataset.vlm_classifier?.dataset) return `${dataset.vlm_classifier.dataset} (vlm_classifier)`;
  if (dataset.hf) return `${dataset.hf.path}${dataset.hf.name ? `/${dataset.hf.name}` : ''} (${dataset.hf.split})`;
  if (dataset.sources) return `a mixture of ${dataset.sources.map((s) => s.path).join(', ')}`;
  return dataset.file_path ?? dataset.builtin ?? 'no dataset';
}

async function checkEvaluators(cfg: { evaluators?: EvaluatorConfig[]; infrequent_evaluators?: EvaluatorConfig[] }): Promise<void> {
  for (const key of ['evaluators', 'infrequent_evaluators'] as const) {
    const evaluators = cfg[key] ?? [];
    for (let i = 0; i < evaluators.length; i++) {
      await checkEvaluatorData(evaluators, i, key).catch((err: Error) => {
        throw new ConfigError(err.message); // names the config path itself, unlike dataset errors
      });
    }
  }
}

export function readConfigFile(path: string): Record<string, unknown> {
  if (!existsSync(path)) throw new ConfigError(`config file ${path} does not exist`);
  try {
    const raw = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('the top level must be an object');
    return raw;
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Paths in a config are relative to the config file, so a config works from any directory. */
function resolvePaths(cfg: Record<string, any>, baseDir: string): void {
  const abs = (p: string) => (p === FROM_PREVIOUS_STAGE || isAbsolute(p) ? p : resolve(baseDir, p));
  const mustExist = (p: string, where: string) => {
    if (p !== FROM_PREVIOUS_STAGE && !existsSync(p)) throw new ConfigError(`${where}: ${p} does not exist`);
  };
  for (const key of ['file_path', 'test_file_path']) {
    if (!cfg.dataset?.[key]) continue;
    cfg.dataset[key] = abs(cfg.dataset[key]);
    mustExist(cfg.dataset[key], `dataset.${key}`);
  }
  // A local `hf` folder is relative to the config file too; a Hub id stays as written.
  if (typeof cfg.dataset?.hf?.path === 'string' && isLocalPath(cfg.dataset.hf.path, baseDir)) {
    cfg.dataset.hf.path = abs(cfg.dataset.hf.path.replace(/^~(?=$|\/)/, homedir()));
    mustExist(cfg.dataset.hf.path, 'dataset.hf.path');
  }
  if (cfg.dataset?.kind === 'custom' && typeof cfg.dataset.module === 'string') {
    cfg.dataset.module = abs(cfg.dataset.module);
    mustExist(cfg.dataset.module, 'dataset.module');
  }
  // A mixture's sources likewise: an SL source's local `path`, an RL source's files, hf folder and module.
  for (const [i, src] of (Array.isArray(cfg.dataset?.sources) ? cfg.dataset.sources : []).entries()) {
    const local = (holder: Record<string, any>, key: string, where: string, onlyIfLocal: boolean) => {
      if (typeof holder?.[key] !== 'string' || (onlyIfLocal && !isLocalPath(holder[key], baseDir))) return;
      holder[key] = abs(holder[key].replace(/^~(?=$|\/)/, homedir()));
      mustExist(holder[key], `dataset.sources.${i}.${where}`);
    };
    local(src, 'path', 'path', true);
    for (const key of ['file_path', 'test_file_path', 'module']) local(src, key, key, false);
    local(src?.hf, 'path', 'hf.path', true);
  }
  for (const [i, dc] of (Array.isArray(cfg.dataset_configs) ? cfg.dataset_configs : []).entries()) {
    if (!dc.dataset?.file_path) continue;
    dc.dataset.file_path = abs(dc.dataset.file_path);
    mustExist(dc.dataset.file_path, `dataset_configs.${i}.dataset.file_path`);
  }
  for (const set of ['evaluators', 'infrequent_evaluators']) {
    for (const [i, e] of (Array.isArray(cfg[set]) ? cfg[set] : []).entries()) {
      // A custom evaluator's file_path; a benchmark entry's data_path (null: the shipped sample).
      for (const key of ['file_path', 'data_path']) {
        if (typeof e[key] !== 'string') continue;
        if (key === 'data_path' && e.kind === 'benchmark') {
          // A local folder or file, or an owner/name Hub id (read from the Hugging Face cache when it is there).
          try {
            e[key] = benchmarkDataPath(e[key].replace(/^~(?=$|\/)/, homedir()), baseDir);
          } catch (err) {
            throw new ConfigError(`${set}.${i}.${key}: ${(err as Error).message}`);
          }
          continue;
        }
        e[key] = abs(e[key]);
        mustExist(e[key], `${set}.${i}.${key}`);
      }
    }
  }
  if (typeof cfg.tokenizer_path === 'string') {
    cfg.tokenizer_path = abs(cfg.tokenizer_path);
    mustExist(cfg.tokenizer_path, 'tokenizer_path');
  }
  if (typeof cfg.model_name === 'string' && (cfg.model_name.startsWith('./') || cfg.model_name.startsWith('../'))) cfg.model_name = abs(cfg.model_name);
}

export interface ResolvedRun {
  kind: RunKind;
  workflowId: string;
  config: Record<string, any>;
  run: RunRef;
  /** Set when the id was made here (no --id): startRun may number it on a clash. */
  generatedId?: { logPathFromId: boolean };
}

/** `<kind>-<name>-<local time>`, without doubling the kind when the name starts with it (`rl-rl_x`). */
export function runIdFor(kind: string, name: string, d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  const time = `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
  const named = new RegExp(`^${kind}[-_]`).test(name) ? name : `${kind}-${name}`;
  return `${named}-${time}`;
}

export function resolveRun(kind: string, configPath: string, overrides: string[], opts: { runsDir?: string; workflowId?: string } = {}): ResolvedRun {
  const spec = TRAINABLE_KINDS[kind];
  if (!spec) throw new ConfigError(`unknown run kind "${kind}" (available: ${Object.keys(TRAINABLE_KINDS).join(', ')})`);
  const config = parseWithOverrides(spec.schema, readConfigFile(configPath), overrides, configPath) as Record<string, any>;
  (spec.resolve ?? resolvePaths)(config, dirname(resolve(configPath)), configPath);
  const refusal = captureRefusal(kind, config.capture);
  if (refusal) throw new ConfigError(`${configPath}: ${refusal}`);
  const name = config.run_name ?? basename(configPath).replace(/\.json$/, '');
  const workflowId = opts.workflowId ?? runIdFor(kind, name);
  const logPathFromId = config.log_path == null;
  const logPath = runLogPath(config.log_path, opts.runsDir, workflowId);
  config.log_path = logPath;
  // One date for the whole run (each pipeline stage too), whatever day a step is rebuilt on.
  const today = localIsoDate();
  for (const c of [config, ...(Array.isArray(config.stages) ? config.stages.map((st: { config: Record<string, any> }) => st.config) : [])]) {
    if ('render_date' in c && c.render_date === null) c.render_date = today;
  }
  checkLogPathFree(logPath);
  return { kind: kind as RunKind, workflowId, config, run: { workflowId, kind: kind as RunKind, logPath }, ...(opts.workflowId ? {} : { generatedId: { logPathFromId } }) };
}

/**
 * The reference's warn_if_renderer_not_recommended: a renderer the model was not trained with
 * silently degrades a fine-tune (e.g. prefilling tokens the model never saw).
 */
export function rendererWarnings(cfg: Record<string, any>): string[] {
  const chosen = [cfg.renderer_name, cfg.dataset?.renderer_name].filter((r): r is string => typeof r === 'string');
  return [...new Set(chosen)].flatMap((r) => rendererNotRecommendedWarning(String(cfg.model_name), r) ?? []);
}

/** Bad data is a config error: it names the file and line, and no run is started. */
export async function checkRunData(r: ResolvedRun): Promise<DataPlan | undefined> {
  await checkRunStore(r.run.logPath);
  try {
    return (await TRAINABLE_KINDS[r.kind].checkData?.(r.config)) ?? undefined;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`dataset: ${(err as Error).message}`);
  }
}

/** Fails fast, with the list of served models, instead of a workflow that fails minutes later. */
export async function checkBackend(baseUrl: string, model: string): Promise<void> {
  let res: Response;
  try {
    res = await fetch(new URL('api/v1/get_server_capabilities', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`), {
      headers: { 'X-API-Key': apiKeyFor(baseUrl) ?? '' },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throw new Error(`cannot reach the training backend at ${baseUrl} (${(err as Error).message}); start it with \`npx cookbook dev\` or set TINKER_BASE_URL`);
  }
  if (res.status === 401 || res.status === 403) throw new Error(`the training backend at ${baseUrl} rejected the API key (HTTP ${res.status}); check TINKER_API_KEY`);
  if (!res.ok) throw new Error(`the training backend at ${baseUrl} answered HTTP ${res.status} to get_server_capabilities`);
  const body = (await res.json()) as { supported_models?: Array<{ model_name?: string; model_id?: string }> };
  const entries = body.supported_models ?? [];
  const served = entries.map((m) => m.model_name || m.model_id).filter(Boolean) as string[];
  // hatchery-core names model families under `model_id`: a model is served when its name starts with one.
  const families = entries.flatMap((m) => (!m.model_name && m.model_id ? [m.model_id] : []));
  const isLocalPath = isAbsolute(model) && existsSync(model);
  if (!isLocalPath && served.length > 0 && !served.includes(model) && !families.some((f) => model.startsWith(f))) {
    throw new ConfigError(`model_name: ${model} is not served by ${baseUrl} (served: ${served.join(', ')})`);
  }
}

export async function startRun(client: Client, r: ResolvedRun, taskQueue = DEFAULT_TASK_QUEUE) {
  const spec = TRAINABLE_KINDS[r.kind];
  const base = { id: r.workflowId, logPath: r.run.logPath };
  // Ids are made to the second: two `train` calls in the same second (a script, a sweep of shells)
  // would clash. Temporal decides who got the id; the other takes the next free number, and its
  // log folder follows its id unless the config named one.
  for (let n = 1; ; n++) {
    if (n > 1) renumber(r, base, n);
    try {
      return await client.workflow.start(spec.workflowType, {
        taskQueue,
        workflowId: r.workflowId,
        args: [{ run: r.run, config: r.config }],
        memo: { config: r.config },
        staticSummary: spec.describe(r.config),
        typedSearchAttributes: [
          { key: KindKey, value: r.kind },
          { key: ModelKey, value: String(r.config.model_name) },
          { key: StepKey, value: 0 },
          { key: StatusKey, value: 'starting' },
        ],
        workflowIdConflictPolicy: 'FAIL',
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      if (!r.generatedId) throw new ConfigError(`--id: a run with id ${r.workflowId} already exists in this namespace; choose another --id, or leave it out for a new one`);
      if (n >= 100) throw err;
    }
  }
}

function renumber(r: ResolvedRun, base: { id: string; logPath: string }, n: number): void {
  r.workflowId = `${base.id}-${n}`;
  r.run = { ...r.run, workflowId: r.workflowId };
  if (r.generatedId?.logPathFromId) {
    r.run.logPath = `${base.logPath}-${n}`;
    r.config.log_path = r.run.logPath;
  }
}
