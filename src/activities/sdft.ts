// SDFT activities (the reference's distillation/sdft.py). Per step: one rollout activity per group
// (the student samples its question from its current sampler weights), one teacher pass per group
// (the teacher, which sees the golden demonstration, forced through the group's completions: top-K
// prompt logprobs, or plain logprobs for importance sampling), then one train activity that builds
// the step's datums from both and trains. Rollouts and teacher passes are written to the run store
// by (step, group); a retried or replayed activity reads them back instead of sampling again.
import { ApplicationFailure } from '@temporalio/activity';
import type { Datum, SamplingSession, TrainingBackend } from '../backends/types.js';
import type { SDFTConfig } from '../cookbook/config/sdft.js';
import { PromptOnlyDataset } from '../cookbook/distillation/prompts.js';
import { buildSdftTeacherPrompt, buildTopkDistillationDatums, computeSdftAdvantages, teacherForcings } from '../cookbook/distillation/sdft.js';
import { loadSDFTData, type SDFTData } from '../cookbook/distillation/sdft-data.js';
import { reverseKlCustomLoss } from '../cookbook/distillation/sdft-reverse-kl.js';
import type { TopkPromptLogprobs } from '../cookbook/distillation/topk.js';
import { rendererForModel } from '../cookbook/renderers/for-model.js';
import type { Renderer } from '../cookbook/renderers/types.js';
import { computeAdvantages } from '../cookbook/rl/advantages.js';
import { assembleTrainingData, splitList } from '../cookbook/rl/data.js';
import { computeTrajectoryMetrics, rolloutSummariesJsonl, rolloutSummaryRows } from '../cookbook/rl/metrics.js';
import { rolloutRecord } from '../cookbook/rl/rollout-record.js';
import { deserializeTrajectoryGroup, serializeTrajectoryGroup } from '../cookbook/rl/serialize.js';
import type { TrajectoryGroup } from '../cookbook/rl/types.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import type { Tokenizer } from '../cookbook/tokenizer.js';
import { nowMs, recordSpan, scopeSpan } from '../cookbook/timing.js';
import { callBackend, heartbeating, rolloutFailure, type ActivityDeps } from './context.js';
import { trainPolicyStep } from './policy-train.js';
import { studentGroupRollout } from './student-rollout.js';
import { runDataCache } from './run-data.js';
import { SamplingSessions } from './sampling-sessions.js';
import { stepTiming } from './timing.js';
import { ErrorTypes, type ModelRef, type SeqUse } from './types.js';
import { modelSession } from './unsequenced.js';

interface SDFTRunData {
  data: SDFTData;
  dataset: PromptOnlyDataset;
  renderer: Renderer;
  tokenizer: Tokenizer;
}

const sdftData = runDataCache<SDFTConfig, SDFTRunData>(
  (cfg) => [cfg.model_name, cfg.renderer_name, cfg.tokenizer_path, cfg.render_date, cfg.dataset],
  async (cfg) => {
    const { renderer, tokenizer } = await rendererForModel(cfg);
    const data = await loadSDFTData(cfg.dataset);
    // SDFTDataset's builders: one ProblemGroupBuilder of PromptOnlyEnv(question) per question.
    const prompts = data.train.questions.map((q) => [{ role: 'user' as const, content: q }]);
    return { data, dataset: new PromptOnlyDataset(prompts, renderer, cfg.dataset.groups_per_batch, cfg.dataset.group_size, data.name), renderer, tokenizer };
  },
);

const pad = (n: number, w = 6) => String(n).padStart(w, '0');
/** Completion tokens each top-K datum leaves out of the loss (the reference's build functions' default). */
const SKIP_FIRST_N_TOKENS = 3;
const rolloutBlob = (step: number, group: number) => `rollouts/iteration_${pad(step)}/group_${pad(group, 4)}.json`;
const teacherBlob = (step: number, group: number) => `sdft_teacher/iteration_${pad(step)}/group_${pad(group, 4)}.json`;

export interface SDFTPlan {
  nBatches: number;
  nTrain: number;
  nTest: number;
}

export interface SDFTRolloutInput {
  run: RunRef;
  step: number;
  group: number;
  samplerPath: string;
}
export interface SDFTRolloutResult {
  /** Run-store reference of the trajectory group; null when no rollout of the group survived. */
  ref: string | null;
  group: number;
  /** True when the group was read back from the run store rather than sampled. */
  reused: boolean;
}

export interface SDFTTeacherInput {
  run: RunRef;
  step: number;
  group: number;
  rolloutRef: string;
  /** Sampler weights of the synced teacher (teacher_sync_every); null: the frozen base model. */
  teacherPath: string | null;
}
export interface SDFTTeacherResult {
  ref: string;
  group: number;
  reused: boolean;
}

/** What a teacher pass records: per datum of the group, its top-K prompt logprobs or its logprobs. */
interface TeacherRecord {
  topk?: Array<TopkPromptLogprobs | null>;
  logprobs?: Array<Array<number | null>>;
}

export interface SDFTTrainInput {
  run: RunRef;
  model: ModelRef;
  step: number;
  groups: Array<{ group: number; rolloutRef: string; teacherRef: string }>;
  learningRate: number;
  preStepMetrics: Record<string, number>;
}
export interface SDFTTrainResult extends SeqUse {
  metrics: Record<string, number>;
  samplerPath: string;
}

/** The datums of one group, as assemble_training_data gives them (advantages 0: every reward is 0). */
function groupDatums(group: TrajectoryGroup): Datum[] {
  return assembleTrainingData([group], computeAdvantages([group])).data_D;
}

export function sdftActivities(deps: ActivityDeps) {
  const backendOf = (cfg: SDFTConfig): TrainingBackend => deps.backendFor(cfg.base_url, cfg.wire);
  const sessions = new SamplingSessions();
  const withSampler = <T>(cfg: SDFTConfig, source: { modelPath: string } | { baseModel: string }, what: string, fn: (s: SamplingSession) => Promise<T>): Promise<T> =>
    sessions.use(`${cfg.base_url ?? ''} ${JSON.stringify(source)}`, () => callBackend(what, 'bad-path', () => backendOf(cfg).createSamplingSession(source)), fn);

  /** The step's datums and the teacher's view of them, group by group in group order. */
  function stepData(run: RunRef, groups: SDFTTrainInput['groups'], questions: string[], goldens: string[], renderer: Renderer, cfg: SDFTConfig) {
    const store = new RunStore(run.logPath);
    const data_D: Datum[] = [];
    const groupIdx_D: number[] = [];
    const topk_D: Array<TopkPromptLogprobs | null> = [];
    const logprobs_D: Array<Array<number | null>> = [];
    const trajectoryGroups: TrajectoryGroup[] = [];
    groups.forEach((g, p) => {
      const tg = deserializeTrajectoryGroup(store.readBlob(g.rolloutRef).toString('utf8'));
      trajectoryGroups.push(tg);
      const teacher = JSON.parse(store.readBlob(g.teacherRef).toString('utf8')) as TeacherRecord;
      for (const [i, d] of groupDatums(tg).entries()) {
        data_D.push(d);
        groupIdx_D.push(p);
        topk_D.push(teacher.topk?.[i] ?? null);
        logprobs_D.push(teacher.logprobs?.[i] ?? []);
      }
    });
    const prompts_P = groups.map((g) => buildSdftTeacherPrompt(questions[g.group], goldens[g.group], renderer, cfg.system_prompt, cfg.demo_template));
    const forcings_D = teacherForcings(data_D, groupIdx_D, prompts_P, cfg.max_context_length);
    return { data_D, forcings_D, topk_D, logprobs_D, trajectoryGroups };
  }

  return {
    async sdftPrepare({ run }: { run: RunRef }): Promise<SDFTPlan> {
      const { data } = sdftData(run);
      const d = await heartbeating(data);
      return { nBatches: d.dataset.length, nTrain: d.data.train.questions.length, nTest: d.data.test.questions.length };
    },

    async sdftRolloutGroup({ run, step, group, samplerPath }: SDFTRolloutInput): Promise<SDFTRolloutResult> {
      const store = new RunStore(run.logPath);
      const rel = rolloutBlob(step, group);
      // Recorded by an earlier attempt: reused, never sampled again.
      if (store.hasBlob(rel)) return { ref: rel, group, reused: true };
      const { cfg, data } = sdftData(run);
      const { dataset } = await heartbeating(data);
      const builder = dataset.getBatch(step)[group];
      if (!builder) throw ApplicationFailure.nonRetryable(`batch ${step} has no group ${group}`, ErrorTypes.data);
      const result = await studentGroupRollout((fn) => withSampler(cfg, { modelPath: samplerPath }, 'create student sampler', fn), builder, {
        seed: cfg.seed,
        step,
        group,
        maxTokens: cfg.max_tokens,
        temperature: cfg.temperature,
        lossFn: cfg.loss_fn,
      });
      if (!result) return { ref: null, group, reused: false };
      return { ref: store.writeBlob(rel, serializeTrajectoryGroup(result)), group, reused: false };
    },

    /** The teacher forced through one group's completions; recorded once per (step, group). */
    async sdftTeacherGroup({ run, step, group, rolloutRef, teacherPath }: SDFTTeacherInput): Promise<SDFTTeacherResult> {
      const store = new RunStore(run.logPath);
      const rel = teacherBlob(step, group);
      if (store.hasBlob(rel)) return { ref: rel, group, reused: true };
      const { cfg, data } = sdftData(run);
      const { data: d, renderer, dataset } = await heartbeating(data);
      const start = step * cfg.dataset.groups_per_batch;
      if (start + group >= d.train.questions.length || group >= dataset.getBatch(step).length) throw ApplicationFailure.nonRetryable(`batch ${step} has no group ${group}`, ErrorTypes.data);
      const q = d.train.questions[start + group];
      const a = d.train.goldenAnswers[start + group];
      const data_D = groupDatums(deserializeTrajectoryGroup(store.readBlob(rolloutRef).toString('utf8')));
      const prompt = buildSdftTeacherPrompt(q, a, renderer, cfg.system_prompt, cfg.demo_template);
      const forcings = teacherForcings(data_D, data_D.map(() => 0), [prompt], cfg.max_context_length);
      const teacher = teacherPath ? { modelPath: teacherPath } : { baseModel: cfg.model_name };
      const started = nowMs();
      let record: TeacherRecord;
      try {
        record = await withSampler(cfg, teacher, 'create teacher sampler', (session) =>
          heartbeating(
            cfg.topk > 0
              ? Promise.all(
                  forcings.map(async (f) => (await session.sample(f.sequence, 1, { max_tokens: 1 }, { includePromptLogprobs: true, topkPromptLogprobs: cfg.topk })).topk_prompt_logprobs ?? null),
                ).then((topk) => ({ topk }))
              : Promise.all(forcings.map((f) => session.computeLogprobs(f.sequence))).then((logprobs) => ({ logprobs })),
            { step, group },
          ),
        );
      } catch (err) {
        throw rolloutFailure(err, `teacher pass of step ${step} group ${group}`);
      } finally {
        recordSpan(cfg.topk > 0 ? (cfg.reverse ? 'build_reverse_kl_datums' : 'build_topk_distillation_datums') : 'compute_sdft_advantages', started, nowMs(), { part: true });
      }
      return { ref: store.writeBlob(rel, JSON.stringify(record)), group, reused: false };
    },

    async sdftTrain(input: SDFTTrainInput): Promise<SDFTTrainResult> {
      const { run, model, step, learningRate, preStepMetrics } = input;
      const { cfg, data } = sdftData(run);
      const { data: d, renderer, tokenizer, dataset } = await heartbeating(data);
      const store = new RunStore(run.logPath);
      const first = step * cfg.dataset.groups_per_batch;
      const questions = d.train.questions.slice(first);
      const goldens = d.train.goldenAnswers.slice(first);
      const builders = dataset.getBatch(step);
      const { data_D, forcings_D, topk_D, logprobs_D, trajectoryGroups } = await scopeSpan('assemble_training_data', async () => stepData(run, input.groups, questions, goldens, renderer, cfg));
      const tags = input.groups.map((g) => builders[g.group].loggingTags());
      store.writeIterationFile(step, 'train_rollout_summaries.jsonl', rolloutSummariesJsonl(rolloutSummaryRows(trajectoryGroups, tags, { iteration: step, split: 'train', samplingClientStep: step })));
      const recorded = input.groups.map((g, i) => ({ ref: g.rolloutRef, batch: step, group: g.group, samplingStep: step, tags: tags[i], trajectories: trajectoryGroups[i] }));
      store.writeRolloutRecord(rolloutRecord(step, recorded, trajectoryGroups, computeAdvantages(trajectoryGroups)));
      const metrics: Record<string, number> = { ...preStepMetrics, ...computeTrajectoryMetrics(trajectoryGroups, tags) };

      const backend = backendOf(cfg);
      const samplerName = `sampler_${pad(step + 1)}`;
      let trained: { seqIdsUsed: number; samplerPath: string; metrics: Record<string, number> };
      // Each builder is a traced function inside a span of its own name in the reference: its time
      // shows twice a step, here as the teacher passes (one span of their parts) and the build.
      if (cfg.topk > 0) {
        const built = await scopeSpan(cfg.reverse ? 'build_reverse_kl_datums' : 'build_topk_distillation_datums', async () =>
          buildTopkDistillationDatums(data_D, forcings_D, topk_D, { topk: cfg.topk, vocabSize: tokenizer.vocabSize, skipFirstNTokens: SKIP_FIRST_N_TOKENS, reverse: cfg.reverse }),
        );
        Object.assign(metrics, built.metrics);
        trained = cfg.reverse
          ? await scopeSpan('train', () => scopeSpan('_train_step_reverse_kl', () => trainReverseKl(backend, model, built.datums, cfg, learningRate, samplerName, step)))
          : await scopeSpan('train', () => policyStep(backend, model, built.datums, cfg, 'cross_entropy', learningRate, samplerName, step));
      } else {
        const built = await scopeSpan('compute_sdft_advantages', async () => computeSdftAdvantages(data_D, forcings_D, logprobs_D));
        Object.assign(metrics, built.metrics);
        trained = await scopeSpan('train', () => policyStep(backend, model, built.datums, cfg, cfg.loss_fn, learningRate, samplerName, step));
      }
      Object.assign(metrics, trained.metrics);
      const timing = stepTiming(run, step);
      Object.assign(metrics, timing.metrics);
      store.writeMetrics({ step, ...metrics });
      timing.write(store);
      return { seqIdsUsed: trained.seqIdsUsed, samplerPath: trained.samplerPath, metrics };
    },
  };
}

async function policyStep(backend: TrainingBackend, model: ModelRef, data_D: Datum[], cfg: SDFTConfig, lossFn: SDFTConfig['loss_fn'], learningRate: number, samplerName: string, step: number) {
  const r = await trainPolicyStep(backend, model, data_D, { ...cfg, loss_fn: lossFn }, { learningRate, samplerName, step });
  return { seqIdsUsed: r.seqIdsUsed, samplerPath: r.samplerPath, metrics: r.optimMetrics };
}

/** _train_step_reverse_kl: per substep a forward_backward_custom and an optim_step, then the next sampler weights. */
async function trainReverseKl(backend: TrainingBackend, model: ModelRef, data_D: Datum[], cfg: SDFTConfig, learningRate: number, samplerName: string, step: number) {
  const session = modelSession(backend, model);
  const adam = { learning_rate: learningRate, beta1: cfg.adam_beta1, beta2: cfg.adam_beta2, eps: cfg.adam_eps };
  let seqId = model.nextSeqId;
  const metrics: Record<string, number> = {};
  for (const batch of splitList(data_D, Math.min(cfg.num_substeps, data_D.length))) {
    const fb = await callBackend('forward_backward_custom', 'model-lost', () => heartbeating(session.forwardBackwardCustom(batch, reverseKlCustomLoss, { seqId }), { step }));
    seqId += fb.seqIds;
    const optim = await callBackend('optim_step', 'model-lost', () => session.optimStep(adam, { seqId }));
    seqId += optim.seqIds;
    const [out, res] = await callBackend('train step', 'model-lost', () => heartbeating(Promise.all([fb.result(), optim.result()]), { step }));
    Object.assign(metrics, out.metrics ?? {}, res.metrics ?? {});
  }
  const sampler = await callBackend('save_weights_for_sampler', 'model-lost', () => session.saveWeightsForSampler(samplerName, { seqId, ttlSeconds: cfg.ttl_seconds }));
  seqId += sampler.seqIds;
  const { path } = (await callBackend('save_weights_for_sampler', 'model-lost', () => heartbeating(sampler.result(), { step }))) as { path: string };
  return { seqIdsUsed: seqId - model.nextSeqId, samplerPath: path, metrics };
}
