// Off-policy distillation activities (distillation/train_off_policy.py). Per step and domain, one
// teacher activity teacher-forces the domain's examples through its teacher and records their
// (N, K) soft targets in the run store (a retry or a replayed step reads them back, never asks the
// teacher again); the domains' activities run concurrently. One train activity per step then runs
// forward_backward (cross_entropy) + optim_step on the recorded datums and writes the metrics row.
import { ApplicationFailure } from '@temporalio/activity';
import type { Datum, SamplingSession, TrainingBackend } from '../backends/types.js';
import type { OffPolicyDistillConfig } from '../cookbook/config/distill-off-policy.js';
import { compositeSteps, domainCounts, pySlicePrefix } from '../cookbook/distillation/off-policy.js';
import { teacherSource, teacherTokenizerProblem } from '../cookbook/distillation/teachers.js';
import { offPolicyTopkDatum, teacherForcedInput } from '../cookbook/distillation/topk.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import { buildChatDatasets, type ChatDatasets } from '../cookbook/supervised/dataset.js';
import { callBackend, heartbeating, type ActivityDeps } from './context.js';
import { runDataCache } from './run-data.js';
import { SamplingSessions } from './sampling-sessions.js';
import { readRunConfig } from './training.js';
import { ErrorTypes, type ModelRef, type SeqUse } from './types.js';
import { modelSession } from './unsequenced.js';

export interface OffPolicyDistillPlan {
  nBatches: number;
  /** Examples each domain contributes to a step (the reference's composite counts). */
  counts: number[];
}

export interface TeacherTargetsInput {
  run: RunRef;
  step: number;
  domain: number;
}
export interface TeacherTargetsResult {
  /** Run-store blob of the domain's datums with their teacher targets, in batch order. */
  ref: string;
}

export interface OffPolicyTrainInput {
  run: RunRef;
  model: ModelRef;
  step: number;
  /** Every domain's recorded targets, in domain order: the step's batch. */
  targets: TeacherTargetsResult[];
  learningRate: number;
  /** The row's first keys: step, progress, learning rate, evals. */
  preStepMetrics: Record<string, number>;
}
export interface OffPolicyTrainResult extends SeqUse {
  metrics: Record<string, number>;
}

export interface OffPolicyDistillActivities {
  offPolicyDistillPrepare(input: { run: RunRef }): Promise<OffPolicyDistillPlan>;
  offPolicyTeacherTargets(input: TeacherTargetsInput): Promise<TeacherTargetsResult>;
  offPolicyDistillTrain(input: OffPolicyTrainInput): Promise<OffPolicyTrainResult>;
}

const pad = (n: number, w = 6) => String(n).padStart(w, '0');

// Every domain's dataset, built from the run's config on any worker and kept for its lifetime.
const domainData = runDataCache<OffPolicyDistillConfig, ChatDatasets[]>(
  (cfg) => [cfg.model_name, cfg.renderer_name, cfg.tokenizer_path, cfg.render_date, cfg.dataset_configs.map((d) => d.dataset)],
  (cfg) => Promise.all(cfg.dataset_configs.map((dc) => buildChatDatasets(dc.dataset, cfg))),
);

/** Runs `fn` on every item with at most `limit` in flight, results in item order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export function offPolicyDistillActivities(deps: ActivityDeps): OffPolicyDistillActivities {
  const backendOf = (cfg: OffPolicyDistillConfig): TrainingBackend => deps.backendFor(cfg.base_url, cfg.wire);
  // Each teacher opened once per worker (the reference opens each once per run).
  const sessions = new SamplingSessions();
  const withTeacher = <T>(cfg: OffPolicyDistillConfig, domain: number, fn: (s: SamplingSession) => Promise<T>): Promise<T> => {
    const source = teacherSource(cfg.dataset_configs[domain].teacher_config);
    return sessions.use(`${cfg.base_url ?? ''} ${JSON.stringify(source)}`, () => callBackend(`create teacher sampler of domain ${domain}`, 'bad-path', () => backendOf(cfg).createSamplingSession(source)), fn);
  };

  return {
    async offPolicyDistillPrepare({ run }) {
      const { cfg, data } = domainData(run);
      cfg.dataset_configs.forEach((dc, d) => {
        const problem = teacherTokenizerProblem(cfg.model_name, dc.teacher_config.base_model);
        if (problem) throw ApplicationFailure.nonRetryable(`dataset_configs.${d}.teacher_config.base_model: ${problem}`, ErrorTypes.config);
      });
      const datasets = await heartbeating(data);
      const nBatches = compositeSteps(datasets.map((d) => d.train.length));
      if (nBatches === 0) {
        const d = datasets.findIndex((ds) => ds.train.length === 0);
        throw ApplicationFailure.nonRetryable(`dataset_configs.${d}.dataset has fewer rows than one batch: no step can run (lower its batch_size or add rows)`, ErrorTypes.data);
      }
      return { nBatches, counts: domainCounts(cfg.dataset_configs.map((dc) => dc.weight), cfg.batch_size) };
    },

    async offPolicyTeacherTargets({ run, step, domain }) {
      const store = new RunStore(run.logPath);
      const ref = `teacher_targets/step_${pad(step)}/domain_${pad(domain, 3)}.json`;
      if (store.hasBlob(ref)) return { ref };
      const { cfg, data } = domainData(run);
      const { train } = (await heartbeating(data))[domain];
      await train.loadBatch(step);
      const counts = domainCounts(cfg.dataset_configs.map((dc) => dc.weight), cfg.batch_size);
      const datums = pySlicePrefix(train.getBatch(step), counts[domain]);
      const k = cfg.n_teacher_targets;
      const targeted = await heartbeating(
        callBackend(`teacher top-${k} of domain ${domain}`, 'session-lost', () =>
          withTeacher(cfg, domain, (teacher) =>
            mapLimited(datums, cfg.teacher_concurrency, async (datum) => {
              const response = await teacher.sample(teacherForcedInput(datum), 1, { max_tokens: 1 }, { includePromptLogprobs: true, topkPromptLogprobs: k });
              return offPolicyTopkDatum(datum, response.topk_prompt_logprobs, k);
            }),
          ),
        ),
        { step, domain },
      );
      // Written whole (temp file + rename): what a retry finds is complete.
      store.writeBlob(ref, JSON.stringify(targeted));
      return { ref };
    },

    async offPolicyDistillTrain({ run, model, step, targets, learningRate, preStepMetrics }) {
      const cfg = readRunConfig<OffPolicyDistillConfig>(run);
      const store = new RunStore(run.logPath);
      const batch_D = targets.flatMap((t) => JSON.parse(store.readBlob(t.ref).toString('utf8')) as Datum[]);
      const client = modelSession(backendOf(cfg), model);
      const fb = await callBackend('forward_backward', 'model-lost', () => client.forwardBackward(batch_D, 'cross_entropy', { seqId: model.nextSeqId }));
      const adam = { learning_rate: learningRate, beta1: cfg.adam_beta1, beta2: cfg.adam_beta2, eps: cfg.adam_eps };
      const optim = await callBackend('optim_step', 'model-lost', () => client.optimStep(adam, { seqId: model.nextSeqId + fb.seqIds }));
      const [out] = await callBackend('train step', 'model-lost', () => heartbeating(Promise.all([fb.result(), optim.result()]), { step }));
      const metrics: Record<string, number> = { ...preStepMetrics, batch_size: batch_D.length };
      for (const [k, v] of Object.entries(out.metrics ?? {})) metrics[`train/${k}`] = v;
      store.writeMetrics({ step, ...metrics });
      if (!Object.values(out.metrics ?? {}).every(Number.isFinite)) {
        throw ApplicationFailure.nonRetryable(`step ${step}: the loss is not finite (${JSON.stringify(out.metrics)}); the run stops here and its last checkpoint is intact`, ErrorTypes.nonFiniteLoss);
      }
      return { seqIdsUsed: fb.seqIds + optim.seqIds, metrics };
    },
  };
}
