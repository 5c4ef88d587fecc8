// RL activities (cookbook-spec §2.9): one activity per group rollout (all groups of a batch run in
// parallel), one activity per training step. Trajectories go to the run store and travel as
// references; sampling seeds come from (run seed, step, group, sample, attempt), so a retried or
// replayed rollout samples exactly what the first attempt sampled.
import { ApplicationFailure } from '@temporalio/activity';
import type { Datum, SamplingSession, TrainingBackend } from '../backends/types.js';
import type { RLConfig } from '../cookbook/config/rl.js';
import { computeAdvantages, removeConstantRewardGroups } from '../cookbook/rl/advantages.js';
import { tinkerTokenCompleter } from '../cookbook/rl/completers.js';
import { assembleTrainingData } from '../cookbook/rl/data.js';
import { buildRLDatasets } from '../cookbook/rl/datasets.js';
import { alignScoredLogprobs, computeKlSampleTrain, computePostKl, fullSequenceForScoring, incorporateKlPenalty } from '../cookbook/rl/kl.js';
import { computeTrajectoryMetrics, rolloutSummariesJsonl, rolloutSummaryRows } from '../cookbook/rl/metrics.js';
import { doGroupRolloutAndFilterConstantReward, resolveRolloutStrategyConfig, strategyFromConfig, type RolloutPolicyFactory } from '../cookbook/rl/rollouts.js';
import { rolloutRecord } from '../cookbook/rl/rollout-record.js';
import { sequentialSeeds } from '../cookbook/rl/seeds.js';
import { deserializeTrajectoryGroup, serializeTrajectoryGroup } from '../cookbook/rl/serialize.js';
import type { TrajectoryGroup } from '../cookbook/rl/types.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import { callBackend, heartbeating, rolloutFailure, type ActivityDeps } from './context.js';
import { trainPolicyStep } from './policy-train.js';
import { runDataCache } from './run-data.js';
import { ErrorTypes, type ModelRef, type SeqUse } from './types.js';

type RLData = Awaited<ReturnType<typeof buildRLDatasets>>;
const rlData = runDataCache<RLConfig, RLData>(
  (cfg) => [cfg.model_name, cfg.renderer_name, cfg.tokenizer_path, cfg.render_date, cfg.dataset],
  (cfg) => buildRLDatasets(cfg.dataset, cfg),
);

const pad = (n: number) => String(n).padStart(6, '0');
/** Seeds of eval rollouts live apart from training ones: a fixed marker in the seed path. */
const EVAL_SEED_MARKER = 1_000_003;

export interface RolloutGroupInput {
  run: RunRef;
  step: number;
  group: number;
  samplerPath: string;
  /** The step whose weights the sampler holds (for staleness in async mode and summaries). */
  samplingStep: number;
  /** How often this group was sampled before (async mode requeues stale groups). */
  attempt?: number;
}
export interface RolloutGroupResult {
  /** Run-store reference of the trajectory group; null when the strategy dropped the group. */
  ref: string | null;
  /** Dataset batch and group the builder came from. */
  batch: number;
  group: number;
  samplingStep: number;
  errorTypes: string[];
  meanReward: number | null;
}

export interface RLPlan {
  nBatches: number;
  groupsPerBatch: number;
  hasTest: boolean;
}

export interface RLTrainInput {
  run: RunRef;
  model: ModelRef;
  step: number;
  groups: RolloutGroupResult[];
  learningRate: number;
  /** Progress and eval metrics, first in the row (§2.9 step 1–2). */
  preStepMetrics: Record<string, number>;
  /** Run-cumulative rollout error metrics, last in the row (§2.9 step 12). */
  errorMetrics: Record<string, number>;
}
export interface RLTrainResult extends SeqUse {
  metrics: Record<string, number>;
  /** Sampler weights after this step: what the next step's rollouts sample from. */
  samplerPath: string;
}

function policyFor(session: SamplingSession, cfg: RLConfig, seedPrefix: number[]): RolloutPolicyFactory {
  return {
    forRollout: ({ sampleIndex, attempt }) =>
      tinkerTokenCompleter(session, { maxTokens: cfg.max_tokens, temperature: cfg.temperature, seedFor: sequentialSeeds(cfg.seed, ...seedPrefix, sampleIndex, attempt) }),
  };
}

/** Backend trouble is infrastructure (retry the activity); anything else is the env's own failure. */
export function rlActivities(deps: ActivityDeps) {
  const backendOf = (cfg: RLConfig): TrainingBackend => deps.backendFor(cfg.base_url);

  async function rolloutGroups(cfg: RLConfig, samplerPath: string, builders: ReturnType<RLData['train']['getBatch']>, seedPrefix: (g: number) => number[]) {
    const session = await callBackend('create sampling session', 'bad-path', () => backendOf(cfg).createSamplingSession({ modelPath: samplerPath }));
    const strategy = strategyFromConfig(resolveRolloutStrategyConfig(cfg.rollout_error_tolerance, cfg.model_name));
    return Promise.all(builders.map((b, g) => doGroupRolloutAndFilterConstantReward(b, policyFor(session, cfg, seedPrefix(g)), { strategy })));
  }

  return {
    async rlPrepare({ run }: { run: RunRef }): Promise<RLPlan> {
      const { data } = rlData(run);
      const { train, test } = await heartbeating(data);
      if (train.length === 0) throw ApplicationFailure.nonRetryable('the RL dataset has no batches', ErrorTypes.data);
      return { nBatches: train.length, groupsPerBatch: train.getBatch(0).length, hasTest: Boolean(test && test.length > 0) };
    },

    async rlRolloutGroup({ run, step, group, samplerPath, samplingStep, attempt = 0 }: RolloutGroupInput): Promise<RolloutGroupResult> {
      const { cfg, data } = rlData(run);
      const { train } = await heartbeating(data);
      const builder = train.getBatch(step)[group];
      if (!builder) throw ApplicationFailure.nonRetryable(`batch ${step} has no group ${group}`, ErrorTypes.data);
      let result: TrajectoryGroup | null;
      try {
        [result] = await heartbeating(rolloutGroups(cfg, samplerPath, [builder], () => [step, group, attempt]), { step, group });
      } catch (err) {
        throw rolloutFailure(err, `rollout of step ${step} group ${group}`);
      }
      if (!result) return { ref: null, batch: step, group, samplingStep, errorTypes: [], meanReward: null };
      const name = `rollouts/batch_${pad(step)}/group_${String(group).padStart(4, '0')}${attempt ? `_attempt_${attempt}` : ''}.json`;
      const ref = new RunStore(run.logPath).writeBlob(name, serializeTrajectoryGroup(result));
      const totals = result.getTotalRewards();
      return {
        ref,
        batch: step,
        group,
        samplingStep,
        errorTypes: result.rolloutErrors.map((e) => e.errorType),
        meanReward: totals.reduce((a, b) => a + b, 0) / Math.max(totals.length, 1),
      };
    },

    async rlTrain(input: RLTrainInput): Promise<RLTrainResult> {
      const { run, model, step, learningRate, preStepMetrics, errorMetrics } = input;
      const { cfg, data } = rlData(run);
      const { train } = await heartbeating(data);
      const store = new RunStore(run.logPath);
      const kept = input.groups.filter((g) => g.ref !== null);
      const loaded = kept.map((g) => deserializeTrajectoryGroup(store.readBlob(g.ref!).toString('utf8')));
      let groups = loaded;
      const tags = kept.map((g) => train.getBatch(g.batch)[g.group]?.loggingTags() ?? []);
      if (cfg.rollout_json_export) {
        const rows = rolloutSummaryRows(groups, tags, { iteration: step, split: 'train', samplingClientStep: kept[0]?.samplingStep ?? null });
        store.writeIterationFile(step, 'train_rollout_summaries.jsonl', rolloutSummariesJsonl(rows));
      }
      if (cfg.remove_constant_reward_groups) groups = removeConstantRewardGroups(groups);
      const trajectoryMetrics = computeTrajectoryMetrics(groups, tags.slice(0, groups.length));
      const advantages = computeAdvantages(groups);
      const recorded = kept.map((g, i) => ({ ref: g.ref!, batch: g.batch, group: g.group, samplingStep: g.samplingStep, tags: tags[i], trajectories: loaded[i] }));
      store.writeRolloutRecord(rolloutRecord(step, recorded, groups, advantages));
      const { data_D } = assembleTrainingData(groups, advantages);
      const klMetrics = cfg.kl_penalty_coef > 0 ? await heartbeating(klPenalty(cfg, data_D)) : {};

      const trained = await trainPolicyStep(backendOf(cfg), model, data_D, cfg, { learningRate, samplerName: `sampler_${pad(step + 1)}`, step });
      const { samplerPath } = trained;
      const postKl = cfg.compute_post_kl ? computePostKl(data_D, await heartbeating(scoreAll(await newSampler(cfg, samplerPath), data_D))) : {};
      const metrics: Record<string, number> = {
        ...preStepMetrics,
        ...trajectoryMetrics,
        ...klMetrics,
        ...trained.optimMetrics,
        ...computeKlSampleTrain(data_D, trained.trainLogprobs_D),
        ...postKl,
        ...errorMetrics,
      };
      store.writeMetrics({ step, ...metrics });
      return { seqIdsUsed: trained.seqIdsUsed, metrics, samplerPath };
    },

    /** The RL test-set evaluator (§2.11) on the pre-update sampler: every test group in parallel. */
    async rlEval({ run, step, samplerPath }: { run: RunRef; step: number; samplerPath: string }): Promise<{ metrics: Record<string, number> }> {
      const { cfg, data } = rlData(run);
      const { test } = await heartbeating(data);
      if (!test) return { metrics: {} };
      const builders = Array.from({ length: test.length }, (_, i) => test.getBatch(i)).flat();
      let groups: Array<TrajectoryGroup | null>;
      try {
        groups = await heartbeating(rolloutGroups(cfg, samplerPath, builders, (g) => [EVAL_SEED_MARKER, step, g]), { step, eval: true });
      } catch (err) {
        throw rolloutFailure(err, `evaluation before step ${step}`);
      }
      const ok = groups.filter((g): g is TrajectoryGroup => g !== null);
      const tags = groups.flatMap((g, i) => (g ? [builders[i].loggingTags()] : []));
      const metrics = computeTrajectoryMetrics(ok, tags);
      const skipped = groups.length - ok.length;
      const errors = ok.flatMap((g) => g.rolloutErrors.map((e) => e.errorType));
      if (errors.length || skipped) {
        for (const type of new Set(errors)) metrics[`rollout_errors/${type}`] = errors.filter((e) => e === type).length;
        metrics['rollout_errors/total'] = errors.length;
        metrics['rollout_errors/groups_skipped'] = skipped;
      }
      if (cfg.rollout_json_export) {
        const rows = rolloutSummaryRows(ok, tags, { iteration: step, split: 'eval/test', samplingClientStep: step });
        new RunStore(run.logPath).writeIterationFile(step, 'eval_test_rollout_summaries.jsonl', rolloutSummariesJsonl(rows));
      }
      return { metrics: Object.fromEntries(Object.entries(metrics).map(([k, v]) => [`test/${k}`, v])) };
    },
  };

  async function newSampler(cfg: RLConfig, modelPath: string): Promise<SamplingSession> {
    return callBackend('create sampling session', 'bad-path', () => backendOf(cfg).createSamplingSession({ modelPath }));
  }

  /** Logprob of every target token of each datum under a sampler (compute_logprobs[1:]). */
  async function scoreAll(sampler: SamplingSession, data_D: Datum[]): Promise<number[][]> {
    return callBackend('compute_logprobs', 'session-lost', () => Promise.all(data_D.map(async (d) => alignScoredLogprobs(await sampler.computeLogprobs(fullSequenceForScoring(d))))));
  }

  /** §2.10: a centred KL penalty against the reference model, added to the advantages. */
  async function klPenalty(cfg: RLConfig, data_D: Datum[]): Promise<Record<string, number>> {
    const ref = cfg.kl_reference_config!;
    const source = ref.load_checkpoint_path ? { modelPath: ref.load_checkpoint_path } : { baseModel: ref.base_model };
    const base = await callBackend('create reference sampler', 'bad-path', () => backendOf(cfg).createSamplingSession(source));
    return incorporateKlPenalty(data_D, await scoreAll(base, data_D), cfg.kl_penalty_coef, cfg.kl_discount_factor);
  }
}
