// Distillation activities (cookbook-spec §5). On-policy: one activity per student group rollout
// (all groups of a step in parallel, sampling the student's current sampler weights), and one
// train activity per step that scores every datum with its dataset's teacher (compute_logprobs on
// the full sequence), turns the reverse KL into advantages and runs the policy step. Off-policy
// sampling stage: one activity per shard of prompts writes the teacher's replies, a last one
// concatenates the shards into the conversations file. Bulky data stays in the run directory.
import { rendererForModel } from '../cookbook/renderers/for-model.js';
import { existsSync, readFileSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { Datum, SamplingSession, TrainingBackend } from '../backends/types.js';
import type { DistillConfig } from '../cookbook/config/distill.js';
import { compositeLength } from '../cookbook/distillation/plan.js';
import { incorporateTeacherKl } from '../cookbook/distillation/kl.js';
import { CompositeDataset, loadPromptsJsonl, PromptOnlyDataset, resolvePromptFile, truncatePrompt } from '../cookbook/distillation/prompts.js';
import { teacherSource, teacherTokenizerProblem } from '../cookbook/distillation/teachers.js';
import { planShards, shardFileName, teacherConversationLine, teacherSampleSeed } from '../cookbook/distillation/teacher-samples.js';
import type { Message, Renderer } from '../cookbook/renderers/types.js';
import { getRecommendedRendererName, getRenderer } from '../cookbook/renderers/registry.js';
import { computeAdvantages } from '../cookbook/rl/advantages.js';
import { tinkerMessageCompleter } from '../cookbook/rl/completers.js';
import { assembleTrainingData } from '../cookbook/rl/data.js';
import { alignScoredLogprobs, computeKlSampleTrain, computePostKl, fullSequenceForScoring } from '../cookbook/rl/kl.js';
import { computeTrajectoryMetrics, rolloutSummariesJsonl, rolloutSummaryRows } from '../cookbook/rl/metrics.js';
import { rolloutRecord } from '../cookbook/rl/rollout-record.js';
import { deserializeTrajectoryGroup, serializeTrajectoryGroup } from '../cookbook/rl/serialize.js';
import { RunStore, writeFileAtomic, type RunRef } from '../cookbook/run-store.js';
import { getTokenizer, type Tokenizer } from '../cookbook/tokenizer.js';
import { scopeSpan } from '../cookbook/timing.js';
import { callBackend, heartbeating, rolloutFailure, type ActivityDeps } from './context.js';
import { trainPolicyStep } from './policy-train.js';
import { studentGroupRollout } from './student-rollout.js';
import { stepTiming } from './timing.js';
import { SamplingSessions } from './sampling-sessions.js';
import { runDataCache } from './run-data.js';
import { readRunConfig } from './training.js';
import { ErrorTypes, type ModelRef, type SeqUse } from './types.js';

interface DistillData {
  /** Each dataset's prompts, truncated to its max_prompt_tokens, in file order. */
  prompts: Message[][][];
  composite: CompositeDataset;
  renderer: Renderer;
  tokenizer: Tokenizer;
}

async function buildDistillData(cfg: DistillConfig): Promise<DistillData> {
  const { renderer, tokenizer } = await rendererForModel(cfg);
  const prompts: Message[][][] = [];
  const parts: PromptOnlyDataset[] = [];
  for (const dc of cfg.dataset_configs) {
    const { absPath, displayPath } = resolvePromptFile(dc.dataset);
    const rows = await loadPromptsJsonl(absPath, displayPath);
    const ps = rows.map((r) => truncatePrompt(r.messages, tokenizer, dc.dataset.max_prompt_tokens));
    prompts.push(ps);
    const name = dc.dataset.name ?? basename(displayPath, extname(displayPath));
    parts.push(new PromptOnlyDataset(ps, renderer, dc.groups_per_batch, dc.dataset.group_size, name));
  }
  return { prompts, composite: new CompositeDataset(parts), renderer, tokenizer };
}

// Built from the run's config on any worker and kept for the worker's lifetime: prompts are
// referenced by the config, never carried in payloads.
const distillData = runDataCache<DistillConfig, DistillData>(
  (cfg) => [cfg.model_name, cfg.renderer_name, cfg.tokenizer_path, cfg.render_date, cfg.dataset_configs.map((d) => d.dataset)],
  buildDistillData,
);

const pad = (n: number, w = 6) => String(n).padStart(w, '0');

export interface DistillPlan {
  nBatches: number;
  /** Prompts of each dataset and the groups it contributes per batch: the workflow derives each step's groups. */
  promptCounts: number[];
  groupsPerBatch: number[];
}

export interface DistillRolloutInput {
  run: RunRef;
  step: number;
  group: number;
  samplerPath: string;
}
export interface DistillRolloutResult {
  /** Run-store reference of the trajectory group; null when every rollout of the group failed. */
  ref: string | null;
  group: number;
  /** The dataset the group's prompt came from: its datums are scored by that dataset's teacher. */
  dataset: number;
}

export interface DistillTrainInput {
  run: RunRef;
  model: ModelRef;
  step: number;
  groups: DistillRolloutResult[];
  learningRate: number;
  /** Progress metrics, first in the row. */
  preStepMetrics: Record<string, number>;
}
export interface DistillTrainResult extends SeqUse {
  metrics: Record<string, number>;
  samplerPath: string;
}

export interface TeacherSamplePlan {
  nShards: number;
  nPrompts: number;
}
export interface TeacherShardResult {
  shard: number;
  conversations: number;
  /** True when an earlier attempt or run had already written the shard. */
  reused: boolean;
}
export interface TeacherMergeResult {
  outputPath: string;
  conversations: number;
}


export function distillActivities(deps: ActivityDeps) {
  const backendOf = (cfg: DistillConfig): TrainingBackend => deps.backendFor(cfg.base_url, cfg.wire);
  // The students' rollouts of a step share its sampler, and every step its teachers (the reference
  // opens each teacher once per run).
  const sessions = new SamplingSessions();
  const sampler = (cfg: DistillConfig, source: { modelPath: string } | { baseModel: string }, what: string): Promise<SamplingSession> =>
    callBackend(what, 'bad-path', () => backendOf(cfg).createSamplingSession(source));
  const withSampler = <T>(cfg: DistillConfig, source: { modelPath: string } | { baseModel: string }, what: string, fn: (s: SamplingSession) => Promise<T>): Promise<T> =>
    sessions.use(`${cfg.base_url ?? ''} ${JSON.stringify(source)}`, () => sampler(cfg, source, what), fn);

  /** Logprob of every target token of each datum under its dataset's teacher (compute_logprobs[1:]). */
  async function teacherLogprobs(cfg: DistillConfig, data_D: Datum[], dataset_D: number[]): Promise<number[][]> {
    return callBackend('teacher compute_logprobs', 'session-lost', () =>
      Promise.all(
        data_D.map(async (datum, i) => {
          const d = dataset_D[i];
          const teacher = teacherSource(cfg.dataset_configs[d].teacher_config);
          return alignScoredLogprobs(await withSampler(cfg, teacher, `create teacher sampler of dataset ${d}`, (s) => s.computeLogprobs(fullSequenceForScoring(datum))));
        }),
      ),
    );
  }

  /**
   * A step's training on its groups (§5.1), timed under the reference's names; its row's metrics but
   * the timing.
   */
  async function trainStep(input: DistillTrainInput): Promise<DistillTrainResult> {
    const { run, model, step, learningRate, preStepMetrics } = input;
    const { cfg, data } = distillData(run);
    const { composite } = await heartbeating(data);
    const store = new RunStore(run.logPath);
    const { builders } = composite.getBatch(step);
    // Each group keeps its own dataset index (the reference does not re-align its index list
    // after dropping a failed group, which would route datums to the wrong teacher; we do).
    const kept = input.groups.filter((g) => g.ref !== null);
    const groups = kept.map((g) => deserializeTrajectoryGroup(store.readBlob(g.ref!).toString('utf8')));
    const tags = kept.map((g) => builders[g.group]?.loggingTags() ?? []);
    const rows = rolloutSummaryRows(groups, tags, { iteration: step, split: 'train', samplingClientStep: step });
    store.writeIterationFile(step, 'train_rollout_summaries.jsonl', rolloutSummariesJsonl(rows));

    const { trajectoryMetrics, data_D, klMetrics } = await scopeSpan('prepare_minibatch', async () => {
      const trajectoryMetrics = computeTrajectoryMetrics(groups, tags);
      const advantages = computeAdvantages(groups);
      const recorded = kept.map((g, i) => ({ ref: g.ref!, batch: step, group: g.group, samplingStep: step, tags: tags[i], trajectories: groups[i] }));
      store.writeRolloutRecord(rolloutRecord(step, recorded, groups, advantages));
      const { data_D, metadata_D } = await scopeSpan('assemble_training_data', () => assembleTrainingData(groups, advantages));
      const dataset_D = metadata_D.map((m) => kept[m.group_idx].dataset);
      const klMetrics =
        cfg.kl_penalty_coef > 0
          ? await scopeSpan('compute_kl_penalty', () =>
              scopeSpan('incorporate_kl_penalty', async () =>
                incorporateTeacherKl(data_D, await heartbeating(teacherLogprobs(cfg, data_D, dataset_D), { step }), dataset_D, cfg.kl_penalty_coef, cfg.kl_discount_factor),
              ),
            )
          : {};
      return { trajectoryMetrics, data_D, klMetrics };
    });

    const trained = await scopeSpan('train', () => trainPolicyStep(backendOf(cfg), model, data_D, cfg, { learningRate, samplerName: `sampler_${pad(step + 1)}`, step }));
    const { klSampleTrain, postKl } = await scopeSpan('compute_full_batch_metrics_and_get_sampling_client', async () => ({
      klSampleTrain: await scopeSpan('compute_kl_sample_train', () => computeKlSampleTrain(data_D, trained.trainLogprobs_D)),
      postKl: cfg.compute_post_kl
        ? computePostKl(
            data_D,
            await scopeSpan('compute_post_kl', () =>
              heartbeating(
                callBackend('post-update compute_logprobs', 'session-lost', async () => {
                  const after = await sampler(cfg, { modelPath: trained.samplerPath }, 'create post-update sampler');
                  return Promise.all(data_D.map(async (d) => alignScoredLogprobs(await after.computeLogprobs(fullSequenceForScoring(d)))));
                }),
              ),
            ),
          )
        : {},
    }));
    const metrics: Record<string, number> = {
      ...preStepMetrics,
      ...trajectoryMetrics,
      ...klMetrics,
      ...trained.optimMetrics,
      ...klSampleTrain,
      ...postKl,
    };
    return { seqIdsUsed: trained.seqIdsUsed, metrics, samplerPath: trained.samplerPath };
  }

  return {
    async distillPrepare({ run }: { run: RunRef }): Promise<DistillPlan> {
      const { cfg, data } = distillData(run);
      cfg.dataset_configs.forEach((dc, d) => {
        const problem = teacherTokenizerProblem(cfg.model_name, dc.teacher_config.base_model);
        if (problem) throw ApplicationFailure.nonRetryable(`dataset_configs.${d}.teacher_config.base_model: ${problem}`, ErrorTypes.config);
      });
      const { prompts } = await heartbeating(data);
      const promptCounts = prompts.map((p) => p.length);
      const groupsPerBatch = cfg.dataset_configs.map((dc) => dc.groups_per_batch);
      return { nBatches: compositeLength(promptCounts, groupsPerBatch), promptCounts, groupsPerBatch };
    },

    async distillRolloutGroup({ run, step, group, samplerPath }: DistillRolloutInput): Promise<DistillRolloutResult> {
      const { cfg, data } = distillData(run);
      const { composite } = await heartbeating(data);
      const { builders, datasetIndices } = composite.getBatch(step);
      const builder = builders[group];
      if (!builder) throw ApplicationFailure.nonRetryable(`batch ${step} has no group ${group}`, ErrorTypes.data);
      const dataset = datasetIndices[group];
      const result = await studentGroupRollout((fn) => withSampler(cfg, { modelPath: samplerPath }, 'create student sampler', fn), builder, {
        seed: cfg.seed,
        step,
        group,
        maxTokens: cfg.max_tokens,
        temperature: cfg.temperature,
        lossFn: cfg.loss_fn,
      });
      if (!result) return { ref: null, group, dataset };
      const ref = new RunStore(run.logPath).writeBlob(`rollouts/iteration_${pad(step)}/group_${pad(group, 4)}.json`, serializeTrajectoryGroup(result));
      return { ref, group, dataset };
    },

    async distillTrain(input: DistillTrainInput): Promise<DistillTrainResult> {
      const { run, step } = input;
      const trained = await scopeSpan('do_train_step_and_get_sampling_client', () => trainStep(input));
      const timing = stepTiming(run, step);
      const metrics = { ...trained.metrics, ...timing.metrics };
      const store = new RunStore(run.logPath);
      store.writeMetrics({ step, ...metrics });
      timing.write(store);
      return { ...trained, metrics };
    },

    async teacherSamplePlan({ run }: { run: RunRef }): Promise<TeacherSamplePlan> {
      const { cfg, data } = distillData(run);
      const { prompts } = await heartbeating(data);
      const counts = prompts.map((p) => p.length);
      return { nShards: planShards(counts, cfg.off_policy.prompts_per_shard).length, nPrompts: counts.reduce((a, b) => a + b, 0) };
    },

    /** Samples the teacher on one shard of prompts; a shard already on disk is not sampled again. */
    async teacherSampleShard({ run, shard }: { run: RunRef; shard: number }): Promise<TeacherShardResult> {
      const { cfg, data } = distillData(run);
      const store = new RunStore(run.logPath);
      const rel = `teacher_samples/${shardFileName(shard)}`;
      const existing = join(run.logPath, '.cookbook', 'store', rel);
      if (existsSync(existing)) return { shard, conversations: countLines(readFileSync(existing, 'utf8')), reused: true };

      const { prompts } = await heartbeating(data);
      const items = planShards(prompts.map((p) => p.length), cfg.off_policy.prompts_per_shard)[shard];
      if (!items) throw ApplicationFailure.nonRetryable(`there is no shard ${shard}`, ErrorTypes.data);
      const lines: string[] = [];
      const teachers = new Map<number, SamplingSession>();
      try {
        for (const item of items) {
          const dc = cfg.dataset_configs[item.dataset];
          // The teacher speaks its own chat format; the output file is format-free messages.
          const teacherModel = dc.teacher_config.base_model;
          const renderer = getRenderer(cfg.renderer_name ?? getRecommendedRendererName(teacherModel), await getTokenizer(teacherModel));
          if (!teachers.has(item.dataset)) teachers.set(item.dataset, await sampler(cfg, teacherSource(dc.teacher_config), `create teacher sampler of dataset ${item.dataset}`));
          const session = teachers.get(item.dataset)!;
          const prompt = prompts[item.dataset][item.prompt];
          const replies = await heartbeating(
            Promise.all(
              Array.from({ length: cfg.off_policy.samples_per_prompt }, (_, sample) => {
                const seed = teacherSampleSeed(cfg.seed, item, sample);
                return tinkerMessageCompleter(session, renderer, { maxTokens: cfg.max_tokens, temperature: cfg.temperature, seedFor: () => seed })(prompt);
              }),
            ),
            { shard, item },
          );
          for (const reply of replies) lines.push(teacherConversationLine(prompt, reply));
        }
      } catch (err) {
        throw rolloutFailure(err, `teacher sampling of shard ${shard}`);
      }
      // Written whole (temp file + rename): a shard on disk is always complete.
      store.writeBlob(rel, lines.map((l) => l + '\n').join(''));
      return { shard, conversations: lines.length, reused: false };
    },

    /** Concatenates the shards, in shard order, into `<log_path>/<output_name>`. */
    async teacherSampleMerge({ run, nShards }: { run: RunRef; nShards: number }): Promise<TeacherMergeResult> {
      const cfg = readRunConfig<DistillConfig>(run);
      const store = new RunStore(run.logPath);
      const parts: string[] = [];
      for (let shard = 0; shard < nShards; shard++) {
        const rel = `teacher_samples/${shardFileName(shard)}`;
        if (!existsSync(join(run.logPath, '.cookbook', 'store', rel))) throw ApplicationFailure.nonRetryable(`shard ${shard} was never written`, ErrorTypes.data);
        parts.push(store.readBlob(rel).toString('utf8'));
      }
      const text = parts.join('');
      const outputPath = join(run.logPath, cfg.off_policy.output_name);
      writeFileAtomic(outputPath, text);
      return { outputPath, conversations: countLines(text) };
    },
  };
}

const countLines = (text: string) => text.split('\n').filter((l) => l.trim() !== '').length;
