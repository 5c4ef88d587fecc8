// RL activities (cookbook-spec §2.9): one activity per group rollout (all groups of a batch run in
// parallel), one activity per training step — with streaming minibatches, one per optimizer
// substep, trained while the step's later groups still sample, and one that finishes the step.
// Trajectories go to the run store and travel as references; sampling seeds come from (run seed,
// step, group, sample, attempt), so a retried or replayed rollout samples exactly what the first
// attempt sampled.
import { ApplicationFailure } from '@temporalio/activity';
import type { Datum, SamplingSession, TrainingBackend } from '../backends/types.js';
import { SamplingSessions } from './sampling-sessions.js';
import { captureRollouts, captureTrainOp } from '../capture/run-capture.js';
import { trainingLossFn, type RLConfig } from '../cookbook/config/rl.js';
import { computeAdvantages, removeConstantRewardGroups } from '../cookbook/rl/advantages.js';
import { tinkerTokenCompleter } from '../cookbook/rl/completers.js';
import { assembleTrainingData, streamMinibatchRanges } from '../cookbook/rl/data.js';
import { buildRLDatasets } from '../cookbook/rl/datasets.js';
import { alignScoredLogprobs, computeKlSampleTrain, computePostKl, fullSequenceForScoring, incorporateKlPenalty } from '../cookbook/rl/kl.js';
import { rolloutUsage, scoreSequences, trainingUsage } from '../cookbook/rl/usage.js';
import { addTokens, NO_TOKENS, TokenTracker, type TokenTotals, type TokenUsage } from '../cookbook/token-usage.js';
import { computeTrajectoryMetrics, rolloutSummariesJsonl, rolloutSummaryRows } from '../cookbook/rl/metrics.js';
import { doGroupRolloutAndFilterConstantReward, resolveRolloutStrategyConfig, strategyFromConfig, type RolloutPolicyFactory } from '../cookbook/rl/rollouts.js';
import { bindRollout, samplerRolloutContext } from '../cookbook/rl/rollout-context.js';
import { runStoreOnce } from '../cookbook/rl/side-effects.js';
import { effectiveTermination } from '../cookbook/rl/rollout-limits.js';
import { rolloutRecord } from '../cookbook/rl/rollout-record.js';
import { sequentialSeeds } from '../cookbook/rl/seeds.js';
import { deserializeStreamedSubstep, mergeStreamedSubsteps, serializeStreamedSubstep, type StreamedGroup, type StreamedSubstep } from '../cookbook/rl/streamed-substep.js';
import { deserializeTrajectoryGroup, serializeTrajectoryGroup } from '../cookbook/rl/serialize.js';
import type { TrajectoryGroup } from '../cookbook/rl/types.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import { nowMs, recordSpan, scopeSpan } from '../cookbook/timing.js';
import { callBackend, heartbeating, rolloutFailure, samplingBackendOf, type ActivityDeps } from './context.js';
import { savePolicySampler, trainPolicyStep, trainPolicySubstep, trainPolicySubsteps } from './policy-train.js';
import { runDataCache } from './run-data.js';
import { asEvalsPart, currentTiming, stepTiming, storedSpans } from './timing.js';
import { ErrorTypes, type ModelRef, type SeqUse } from './types.js';

type RLData = Awaited<ReturnType<typeof buildRLDatasets>>;
const rlDataCache = runDataCache<RLConfig, RLData>(
  (cfg) => [cfg.model_name, cfg.renderer_name, cfg.tokenizer_path, cfg.render_date, cfg.dataset],
  (cfg) => buildRLDatasets(cfg.dataset, cfg),
);
/** The run's config with `loss_fn` the loss it trains with (an async run's is its async config's). */
function rlData(run: RunRef): { cfg: RLConfig; data: Promise<RLData> } {
  const { cfg, data } = rlDataCache(run);
  return { cfg: { ...cfg, loss_fn: trainingLossFn(cfg) }, data };
}

const pad = (n: number) => String(n).padStart(6, '0');
const allSame = (xs: readonly number[]) => xs.every((x) => x === xs[0]);
/** Seeds of eval rollouts live apart from training ones: a fixed marker in the seed path. */
const EVAL_SEED_MARKER = 1_000_003;
/** Seeds of side samplers (answerer, opponent, grader) follow a marker no sample index reaches. */
const SIDE_SAMPLER_SEED_MARKER = 1_000_033;

export interface RolloutGroupInput {
  run: RunRef;
  step: number;
  group: number;
  samplerPath: string;
  /** The step whose weights the sampler holds (for staleness in async mode and summaries). */
  samplingStep: number;
  /** How often this group was sampled before (async mode requeues stale groups). */
  attempt?: number;
  /**
   * Async (0.6.1's trajectory worker): with remove_constant_reward_groups, a group whose rewards are
   * all equal is dropped as it completes (ref null, its sampling in `discarded`), so it never takes
   * a place in a step.
   */
  dropConstantReward?: boolean;
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
  /**
   * The batch has no group in this slot (a short batch: the last one, or one whose rows the
   * dataset dropped, as math_rl's Polaris and DeepMath do): nothing sampled, not a dropped group.
   */
  absent?: true;
  /** Dropped for a constant reward as it completed (`dropConstantReward`): the sampling it cost. */
  discarded?: TokenUsage;
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
  /** The run's token totals before this step (workflow state): the row's cumulative counts go on from them. */
  tokens: TokenTotals;
  /** Async, no rollout left to sample the new weights (0.6.1's SamplingClientReuse): save none, keep this sampler. */
  keepSampler?: string;
}
export interface RLTrainResult extends SeqUse {
  metrics: Record<string, number>;
  /** Sampler weights after this step: what the next step's rollouts sample from. */
  samplerPath: string;
  /** The run's token totals after this step, its dropped groups' sampling included. */
  tokens: TokenTotals;
}

/** One optimizer substep of a streaming step, trained as soon as its groups are sampled. */
export interface RLStreamSubstepInput {
  run: RunRef;
  model: ModelRef;
  step: number;
  substep: number;
  /** The substep's groups, in group order (dropped ones keep their places in their minibatch). */
  groups: RolloutGroupResult[];
  learningRate: number;
}
export interface RLStreamSubstepResult extends SeqUse {
  /** Run-store blob of what the substep trained (StreamedSubstep): the step's finish reads it. */
  ref: string;
}
/** The end of a streaming step: the sampler save, the step's metrics row over all its substeps. */
export interface RLStreamFinishInput {
  run: RunRef;
  model: ModelRef;
  step: number;
  /** Blobs of the substeps trained, in order. */
  substeps: string[];
  preStepMetrics: Record<string, number>;
  errorMetrics: Record<string, number>;
  tokens: TokenTotals;
}

function policyFor(session: SamplingSession, cfg: RLConfig, seedPrefix: number[]): RolloutPolicyFactory {
  return {
    forRollout: ({ sampleIndex, attempt }) =>
      tinkerTokenCompleter(session, {
        maxTokens: cfg.max_tokens,
        temperature: cfg.temperature,
        seedFor: sequentialSeeds(cfg.seed, ...seedPrefix, sampleIndex, attempt),
        // The reference's records_stability_info(): what stable_reinforce trains on is recorded at sampling.
        recordStabilityInfo: cfg.loss_fn === 'stable_reinforce',
      }),
  };
}

/** A streaming step's training (its substeps and its finish), as the reference's scope names it. */
const STREAMING_STEP_SPAN = 'do_train_step_streaming_and_get_sampling_client';

/**
 * A step's metrics row: its training's metrics, the step's timing, then the run's error counts (as
 * the reference's §2.9 step 12), and the step's timing_spans row.
 */
function writeStepRow(run: RunRef, step: number, trained: Record<string, number>, errorMetrics: Record<string, number>): Record<string, number> {
  const timing = stepTiming(run, step);
  const metrics = { ...trained, ...timing.metrics, ...errorMetrics };
  const store = new RunStore(run.logPath);
  store.writeMetrics({ step, ...metrics });
  timing.write(store);
  return metrics;
}

/**
 * A rollout activity's span: in sync RL a part of the step's `sampling` (every group of the batch
 * in parallel, as the reference's span around its gather); with streaming minibatches and in async
 * RL the reference's `trajectory_group_worker`, one per group.
 */
function rolloutSpan(cfg: RLConfig, startMs: number): void {
  if (cfg.async_config || cfg.stream_minibatch_config) recordSpan('trajectory_group_worker', startMs, nowMs());
  else recordSpan('sampling', startMs, nowMs(), { part: true });
}

/** Async RL's `time/sampling_time_max|min|mean` (the reference's compute_sampling_client_metrics): how long each trained group took to sample. */
function samplingTimes(run: RunRef, kept: RolloutGroupResult[]): Record<string, number> {
  const seconds = kept.flatMap((g) => storedSpans(run, g.ref!).filter((span) => span.name === 'trajectory_group_worker').map((span) => span.duration));
  if (seconds.length === 0) return {};
  return {
    'time/sampling_time_max': Math.max(...seconds),
    'time/sampling_time_min': Math.min(...seconds),
    'time/sampling_time_mean': seconds.reduce((a, b) => a + b, 0) / seconds.length,
  };
}

/** A sync streaming substep's groups are one substep of the batch, by position: its minibatches' ranges. */
function syncMinibatches(cfg: RLConfig, groups: RolloutGroupResult[], substep: number, step: number) {
  const stream = cfg.stream_minibatch_config!;
  const ranges = streamMinibatchRanges(stream.groups_per_batch, cfg.num_substeps, stream.num_minibatches)[substep];
  const base = ranges?.[0][0] ?? 0;
  if (!ranges || ranges[ranges.length - 1][1] - base !== groups.length) {
    throw ApplicationFailure.nonRetryable(`rlStreamSubstep: step ${step} substep ${substep} got ${groups.length} groups, which is not one substep of stream_minibatch_config`, ErrorTypes.config);
  }
  return { ordered: groups, local: ranges.map(([start, end]): [number, number] => [start - base, end - base]) };
}

/**
 * An async streaming substep's groups, in the order they completed (0.6.1 fills minibatches so):
 * consecutive minibatches of groups_per_minibatch, the last one shorter when the data ran out.
 * Within a minibatch the groups go to forward_backward oldest sampler first, then by dataset
 * position, so a replayed or rerun step sends the same batch whatever order its rollouts finished in.
 */
function asyncMinibatches(cfg: RLConfig, groups: RolloutGroupResult[], substep: number, step: number) {
  const stream = cfg.stream_minibatch_config!;
  const perSubstep = stream.groups_per_batch / cfg.num_substeps;
  const perMinibatch = perSubstep / stream.num_minibatches;
  if (groups.length === 0 || groups.length > perSubstep || groups.some((g) => g.ref === null)) {
    throw ApplicationFailure.nonRetryable(`rlStreamSubstep: step ${step} substep ${substep} got ${groups.length} groups; an async substep trains 1 to ${perSubstep} sampled groups`, ErrorTypes.config);
  }
  const local: Array<[number, number]> = [];
  for (let start = 0; start < groups.length; start += perMinibatch) local.push([start, Math.min(start + perMinibatch, groups.length)]);
  const byPosition = (a: RolloutGroupResult, b: RolloutGroupResult) => a.samplingStep - b.samplingStep || a.batch - b.batch || a.group - b.group;
  return { ordered: local.flatMap(([start, end]) => groups.slice(start, end).sort(byPosition)), local };
}

/** Backend trouble is infrastructure (retry the activity); anything else is the env's own failure. */
export function rlActivities(deps: ActivityDeps) {
  const backendOf = (cfg: RLConfig): TrainingBackend => deps.backendFor(cfg.base_url, cfg.wire);

  const policySessions = new SamplingSessions();

  function rolloutGroups(run: RunRef, cfg: RLConfig, samplerPath: string, builders: ReturnType<RLData['train']['getBatch']>, seedPrefix: (g: number) => number[]) {
    const open = () => callBackend('create sampling session', 'bad-path', () => samplingBackendOf(deps, cfg).createSamplingSession({ modelPath: samplerPath }));
    return policySessions.use(`${cfg.base_url ?? ''} ${JSON.stringify(cfg.sampler_pool)} ${samplerPath}`, open, (session) => rolloutGroupsOn(run, session, cfg, builders, seedPrefix));
  }

  async function rolloutGroupsOn(run: RunRef, session: SamplingSession, cfg: RLConfig, builders: ReturnType<RLData['train']['getBatch']>, seedPrefix: (g: number) => number[]) {
    const strategy = strategyFromConfig(resolveRolloutStrategyConfig(cfg.rollout_error_tolerance, cfg.model_name));
    const termination = effectiveTermination(cfg.termination, cfg.model_name);
    // Side samplers (answerers, opponents, graders, reward models) are seeded from the same position as the policy.
    const contextFor = (g: number) =>
      samplerRolloutContext({
        openSession: (source) => callBackend('create side sampler', 'bad-path', () => samplingBackendOf(deps, cfg).createSamplingSession(source)),
        policyModel: cfg,
        seeds: (...parts) => sequentialSeeds(cfg.seed, ...seedPrefix(g), SIDE_SAMPLER_SEED_MARKER, ...parts),
        // Tool calls and sandbox runs: recorded by the same position, replayed when this activity is retried.
        once: runStoreOnce(new RunStore(run.logPath), seedPrefix(g)),
      });
    return Promise.all(
      builders.map((b, g) => doGroupRolloutAndFilterConstantReward(bindRollout(b, contextFor(g), cfg.rollout_limits, { parseErrors: cfg.parse_errors, hooks: cfg.rollout_hooks }), policyFor(session, cfg, seedPrefix(g)), { strategy, termination })),
    );
  }

  return {
    async rlPrepare({ run }: { run: RunRef }): Promise<RLPlan> {
      const { data } = rlData(run);
      const { train, test } = await heartbeating(data);
      if (train.length === 0) throw ApplicationFailure.nonRetryable('the RL dataset has no batches', ErrorTypes.data);
      const groupsPerBatch = train.getBatch(0).length;
      const { stream_minibatch_config: stream, async_config } = rlData(run).cfg;
      // Async steps take groups as they complete, whatever dataset batch they came from.
      if (stream && !async_config && stream.groups_per_batch !== groupsPerBatch) {
        throw ApplicationFailure.nonRetryable(
          `stream_minibatch_config.groups_per_batch is ${stream.groups_per_batch} but each dataset batch has ${groupsPerBatch} groups; they must be equal`,
          ErrorTypes.config,
        );
      }
      return { nBatches: train.length, groupsPerBatch, hasTest: Boolean(test && test.length > 0) };
    },

    async rlRolloutGroup({ run, step, group, samplerPath, samplingStep, attempt = 0, dropConstantReward }: RolloutGroupInput): Promise<RolloutGroupResult> {
      const { cfg, data } = rlData(run);
      const { train } = await heartbeating(data);
      // Epoch e replays the dataset in order: global step i samples batch i mod len(dataset).
      const batch = step % train.length;
      const builder = train.getBatch(batch)[group];
      // Slots are planned from batch 0's size; a shorter batch trains the groups it has, as the reference's loop does.
      if (!builder) return { ref: null, batch, group, samplingStep, errorTypes: [], meanReward: null, absent: true };
      let result: TrajectoryGroup | null;
      const started = nowMs();
      try {
        [result] = await heartbeating(rolloutGroups(run, cfg, samplerPath, [builder], () => [step, group, attempt]), { step, group });
      } catch (err) {
        throw rolloutFailure(err, `rollout of step ${step} group ${group}`);
      } finally {
        rolloutSpan(cfg, started);
      }
      const name = `rollouts/batch_${pad(step)}/group_${String(group).padStart(4, '0')}${attempt ? `_attempt_${attempt}` : ''}.json`;
      const dropped = result !== null && dropConstantReward === true && cfg.remove_constant_reward_groups && allSame(result.getTotalRewards());
      // Async rollouts belong to whichever step trains them: their spans are kept by trajectory
      // group (beside no step's), where that step's rlTrain reads its groups' sampling times.
      if (cfg.async_config) currentTiming()?.storeAt(result && !dropped ? name : undefined);
      if (!result) return { ref: null, batch, group, samplingStep, errorTypes: [], meanReward: null };
      if (dropped) {
        captureRollouts(cfg.capture, result, { run, iteration: step, group, attempt, purpose: 'rollout', policyVersion: samplerPath });
        return { ref: null, batch, group, samplingStep, errorTypes: [], meanReward: result.getTotalRewards()[0] ?? null, discarded: rolloutUsage([result]) };
      }
      const ref = new RunStore(run.logPath).writeBlob(name, serializeTrajectoryGroup(result));
      captureRollouts(cfg.capture, result, { run, iteration: step, group, attempt, purpose: 'rollout', policyVersion: samplerPath });
      const totals = result.getTotalRewards();
      return {
        ref,
        batch,
        group,
        samplingStep,
        errorTypes: result.rolloutErrors.map((e) => e.errorType),
        meanReward: totals.reduce((a, b) => a + b, 0) / Math.max(totals.length, 1),
      };
    },

    async rlTrain(input: RLTrainInput): Promise<RLTrainResult> {
      const { run, step, errorMetrics } = input;
      const { cfg, data } = rlData(run);
      if (cfg.stream_minibatch_config) return streamingTrain(input, cfg, await heartbeating(data));
      const trained = await scopeSpan('do_train_step_and_get_sampling_client', () => trainStep(input, cfg, data));
      return { ...trained, metrics: writeStepRow(run, step, trained.metrics, errorMetrics) };
    },

    /**
     * Streaming minibatches trained while the step still samples: substep `substep` of the step, on
     * its groups as soon as they are in the run store; what it trained goes to the run store.
     */
    async rlStreamSubstep({ run, model, step, substep, groups, learningRate }: RLStreamSubstepInput): Promise<RLStreamSubstepResult> {
      const { cfg, data } = rlData(run);
      const stream = cfg.stream_minibatch_config;
      if (!stream) throw ApplicationFailure.nonRetryable(`rlStreamSubstep: run ${run.logPath} has no stream_minibatch_config`, ErrorTypes.config);
      const { ordered, local } = cfg.async_config ? asyncMinibatches(cfg, groups, substep, step) : syncMinibatches(cfg, groups, substep, step);
      const store = new RunStore(run.logPath);
      const started = nowMs();
      const prepared = await prepareStreamSubstep(cfg, store, await heartbeating(data), ordered, local);
      const trained = await trainPolicySubstep(backendOf(cfg), model, prepared.minibatches, cfg, { learningRate, step, substep });
      captureTrainOp(cfg.capture, { run, step, substep, op: 'forward_backward', modelId: model.modelId, details: { loss_fn: cfg.loss_fn } }, prepared.minibatches.flat());
      captureTrainOp(cfg.capture, { run, step, substep, op: 'optim_step', modelId: model.modelId, details: { learning_rate: learningRate } });
      recordSpan(STREAMING_STEP_SPAN, started, nowMs(), { part: true });
      const record: StreamedSubstep = {
        groups: prepared.groups,
        data_D: prepared.minibatches.flat(),
        trainLogprobs_D: trained.trainLogprobs_D,
        klMetrics: prepared.klMetrics,
        optimMetrics: trained.optimMetrics,
        usage: prepared.usage,
        discarded: prepared.discarded,
      };
      const ref = store.writeBlob(`streaming/step_${pad(step)}/substep_${String(substep).padStart(4, '0')}.json`, serializeStreamedSubstep(record));
      return { seqIdsUsed: trained.seqIdsUsed, ref };
    },

    /** The end of a streaming step: the next sampler, then the step's metrics row over every substep. */
    async rlStreamFinish({ run, model, step, substeps, preStepMetrics, errorMetrics, tokens }: RLStreamFinishInput): Promise<RLTrainResult> {
      const { cfg } = rlData(run);
      const store = new RunStore(run.logPath);
      const started = nowMs();
      const trained = mergeStreamedSubsteps(substeps.map((ref) => deserializeStreamedSubstep(store.readBlob(ref).toString('utf8'), ref)));
      const { saved, finished } = await scopeSpan('compute_full_batch_metrics_and_get_sampling_client', async () => {
        const saved = await savePolicySampler(backendOf(cfg), model, { samplerName: `sampler_${pad(step + 1)}`, ttlSeconds: cfg.ttl_seconds, step });
        return { saved, finished: await finishStreamingStep(cfg, store, { run, step, trained, samplerPath: saved.samplerPath, preStepMetrics, tokens }) };
      });
      recordSpan(STREAMING_STEP_SPAN, started, nowMs(), { part: true });
      return { seqIdsUsed: saved.seqIdsUsed, tokens: finished.tokens, metrics: writeStepRow(run, step, finished.metrics, errorMetrics), samplerPath: saved.samplerPath };
    },

    /** The RL test-set evaluator (§2.11) on the pre-update sampler: every test group in parallel. */
    rlEval: ({ run, step, samplerPath }: { run: RunRef; step: number; samplerPath: string }): Promise<{ metrics: Record<string, number> }> => asEvalsPart(run, async () => {
      const { cfg, data } = rlData(run);
      const { test } = await heartbeating(data);
      if (!test) return { metrics: {} };
      const builders = Array.from({ length: test.length }, (_, i) => test.getBatch(i)).flat();
      let groups: Array<TrajectoryGroup | null>;
      try {
        groups = await heartbeating(rolloutGroups(run, cfg, samplerPath, builders, (g) => [EVAL_SEED_MARKER, step, g]), { step, eval: true });
      } catch (err) {
        throw rolloutFailure(err, `evaluation before step ${step}`);
      }
      groups.forEach((g, i) => g && captureRollouts(cfg.capture, g, { run, iteration: step, group: i, attempt: 0, purpose: 'eval', policyVersion: samplerPath }));
      const ok = groups.filter((g): g is TrajectoryGroup => g !== null);
      const tags = groups.flatMap((g, i) => (g ? [builders[i].loggingTags()] : []));
      const metrics = { ...computeTrajectoryMetrics(ok, tags), ...test.evalSetMetrics?.(ok, tags) };
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
    }),
  };

  /**
   * A step's training on its groups (§2.9 steps 6–10), timed under the reference's names; its row's
   * metrics but the timing and the error counts.
   */
  async function trainStep(input: RLTrainInput, cfg: RLConfig, data: Promise<RLData>): Promise<RLTrainResult> {
    const { run, model, step, learningRate, preStepMetrics } = input;
    const tokens = new TokenTracker(input.tokens);
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
    tokens.recordDiscardedSampling(rolloutUsage(loaded.filter((g) => !groups.includes(g))));
    const { trajectoryMetrics, data_D, kl } = await scopeSpan('prepare_minibatch', async () => {
      const trajectoryMetrics = computeTrajectoryMetrics(groups, tags.slice(0, groups.length));
      const advantages = computeAdvantages(groups);
      const recorded = kept.map((g, i) => ({ ref: g.ref!, batch: g.batch, group: g.group, samplingStep: g.samplingStep, tags: tags[i], trajectories: loaded[i] }));
      store.writeRolloutRecord(rolloutRecord(step, recorded, groups, advantages));
      const { data_D } = await scopeSpan('assemble_training_data', () => assembleTrainingData(groups, advantages));
      const kl = cfg.kl_penalty_coef > 0 ? await scopeSpan('kl_vs_base', () => heartbeating(klPenalty(cfg, data_D))) : { metrics: {}, usage: NO_TOKENS };
      return { trajectoryMetrics, data_D, kl };
    });

    const trained = await trainPolicyStep(backendOf(cfg), model, data_D, cfg, { learningRate, samplerName: `sampler_${pad(step + 1)}`, step, keepSampler: input.keepSampler });
    captureTrainOp(cfg.capture, { run, step, op: 'forward_backward', modelId: model.modelId, details: { loss_fn: cfg.loss_fn, num_substeps: cfg.num_substeps } }, data_D);
    captureTrainOp(cfg.capture, { run, step, op: 'optim_step', modelId: model.modelId, details: { learning_rate: learningRate, sampler_path: trained.samplerPath } });
    const { samplerPath } = trained;
    let tokenMetrics = tokens.recordStep(addTokens(rolloutUsage(groups), kl.usage, trainingUsage(data_D)));
    const fullBatch = await scopeSpan('compute_full_batch_metrics_and_get_sampling_client', async () => {
      const klSampleTrain = await scopeSpan('compute_kl_sample_train', () => computeKlSampleTrain(data_D, trained.trainLogprobs_D));
      if (!cfg.compute_post_kl) return { klSampleTrain, postKl: {} };
      const scored = await scopeSpan('compute_post_kl', async () => heartbeating(scoreAll(await newSampler(cfg, samplerPath), data_D)));
      tokenMetrics = tokens.extendStep(scored.usage);
      return { klSampleTrain, postKl: computePostKl(data_D, scored.logprobs_D) };
    });
    const metrics: Record<string, number> = {
      ...preStepMetrics,
      ...(cfg.async_config ? samplingTimes(run, kept) : {}),
      ...trajectoryMetrics,
      ...kl.metrics,
      ...trained.optimMetrics,
      ...fullBatch.klSampleTrain,
      ...tokenMetrics,
      ...fullBatch.postKl,
    };
    return { seqIdsUsed: trained.seqIdsUsed, metrics, samplerPath, tokens: tokens.totals };
  }

  /**
   * A streaming-minibatch step (§2.9) in one activity (histories recorded before substeps became
   * their own activities): the batch's groups, in group order, make `num_substeps` substeps of
   * `num_minibatches` minibatches, all trained after every group was sampled.
   */
  async function streamingTrain(input: RLTrainInput, cfg: RLConfig, data: RLData): Promise<RLTrainResult> {
    const { run, model, step, learningRate, preStepMetrics, errorMetrics, tokens } = input;
    const stream = cfg.stream_minibatch_config!;
    const store = new RunStore(run.logPath);
    const prepared: Array<Awaited<ReturnType<typeof prepareStreamSubstep>>> = [];
    for (const ranges of streamMinibatchRanges(input.groups.length, cfg.num_substeps, stream.num_minibatches)) {
      prepared.push(await prepareStreamSubstep(cfg, store, data, input.groups, ranges));
    }
    const result = await trainPolicySubsteps(backendOf(cfg), model, prepared.map((p) => p.minibatches), cfg, { learningRate, samplerName: `sampler_${pad(step + 1)}`, step });
    const trained: StreamedSubstep = {
      ...mergeStreamedSubsteps(prepared.map((p) => ({ groups: p.groups, data_D: p.minibatches.flat(), trainLogprobs_D: [], klMetrics: p.klMetrics, optimMetrics: null, usage: p.usage, discarded: p.discarded }))),
      trainLogprobs_D: result.trainLogprobs_D,
      optimMetrics: result.optimMetrics,
    };
    const finished = await scopeSpan('compute_full_batch_metrics_and_get_sampling_client', () => finishStreamingStep(cfg, store, { run, step, trained, samplerPath: result.samplerPath, preStepMetrics, tokens }));
    return { seqIdsUsed: result.seqIdsUsed, tokens: finished.tokens, metrics: writeStepRow(run, step, finished.metrics, errorMetrics), samplerPath: result.samplerPath };
  }

  /**
   * One substep's minibatches (`ranges` index into `groups`), each prepared on its own: constant-
   * reward groups dropped per group (their sampling counted as discarded), advantages, KL penalty
   * over the minibatch. Dropped groups count toward their minibatch.
   */
  async function prepareStreamSubstep(cfg: RLConfig, store: RunStore, { train }: RLData, groups: RolloutGroupResult[], ranges: Array<[number, number]>) {
    const trained: StreamedGroup[] = [];
    const minibatches: Datum[][] = [];
    let klMetrics: Record<string, number> | null = null;
    let usage: TokenUsage = NO_TOKENS;
    let discarded: TokenUsage = NO_TOKENS;
    for (const [start, end] of ranges) {
      const sampled = groups
        .slice(start, end)
        .filter((g) => g.ref !== null)
        .map((meta) => ({ meta, group: deserializeTrajectoryGroup(store.readBlob(meta.ref!).toString('utf8')) }));
      const members = sampled.filter(({ group }) => !cfg.remove_constant_reward_groups || !allSame(group.getTotalRewards()));
      discarded = addTokens(discarded, rolloutUsage(sampled.filter((m) => !members.includes(m)).map((m) => m.group)));
      if (members.length === 0) continue;
      // As the reference's prepare_minibatch, once per minibatch.
      const { advantages, data_D } = await scopeSpan('prepare_minibatch', async () => {
        const advantages = computeAdvantages(members.map((m) => m.group));
        const { data_D } = await scopeSpan('assemble_training_data', () => assembleTrainingData(members.map((m) => m.group), advantages));
        usage = addTokens(usage, rolloutUsage(members.map((m) => m.group)));
        if (cfg.kl_penalty_coef > 0) {
          const kl = await scopeSpan('kl_vs_base', () => heartbeating(klPenalty(cfg, data_D)));
          // As the reference: each minibatch's KL penalty metrics replace the previous ones.
          klMetrics = kl.metrics;
          usage = addTokens(usage, kl.usage);
        }
        return { advantages, data_D };
      });
      members.forEach((m, i) => trained.push({ meta: m.meta, advantages: advantages[i], tags: train.getBatch(m.meta.batch)[m.meta.group]?.loggingTags() ?? [] }));
      minibatches.push(data_D);
    }
    return { groups: trained, minibatches, klMetrics, usage, discarded };
  }

  /**
   * A streaming step's rollout summaries, rollout record and metrics (but its timing and error
   * counts), aggregated over the whole batch as the reference does once its last substep is applied.
   */
  async function finishStreamingStep(
    cfg: RLConfig,
    store: RunStore,
    opts: { run: RunRef; step: number; trained: StreamedSubstep; samplerPath: string; preStepMetrics: Record<string, number>; tokens: TokenTotals },
  ): Promise<{ metrics: Record<string, number>; tokens: TokenTotals }> {
    const { step, trained, samplerPath } = opts;
    const loaded = trained.groups.map((t) => deserializeTrajectoryGroup(store.readBlob(t.meta.ref!).toString('utf8')));
    const tags = trained.groups.map((t) => t.tags);
    if (cfg.rollout_json_export) {
      const rows = rolloutSummaryRows(loaded, tags, { iteration: step, split: 'train', samplingClientStep: trained.groups[0]?.meta.samplingStep ?? null });
      store.writeIterationFile(step, 'train_rollout_summaries.jsonl', rolloutSummariesJsonl(rows));
    }
    const recorded = trained.groups.map((t, i) => ({ ref: t.meta.ref!, batch: t.meta.batch, group: t.meta.group, samplingStep: t.meta.samplingStep, tags: t.tags, trajectories: loaded[i] }));
    store.writeRolloutRecord(rolloutRecord(step, recorded, loaded, trained.groups.map((t) => t.advantages)));
    const all_D = trained.data_D;
    // A step whose every group was dropped still logs its (zero) counts, as the reference's.
    const tokens = new TokenTracker(opts.tokens);
    tokens.recordDiscardedSampling(trained.discarded ?? NO_TOKENS);
    let tokenMetrics = tokens.recordStep(addTokens(trained.usage ?? NO_TOKENS, trainingUsage(all_D)));
    let postKl: Record<string, number> = {};
    if (cfg.compute_post_kl && all_D.length) {
      const scored = await scopeSpan('compute_post_kl', async () => heartbeating(scoreAll(await newSampler(cfg, samplerPath), all_D)));
      postKl = computePostKl(all_D, scored.logprobs_D);
      tokenMetrics = tokens.extendStep(scored.usage);
    }
    const samplingSteps = trained.groups.map((t) => t.meta.samplingStep);
    const metrics: Record<string, number> = {
      ...opts.preStepMetrics,
      ...(cfg.async_config ? samplingTimes(opts.run, trained.groups.map((t) => t.meta)) : {}),
      ...(loaded.length ? computeTrajectoryMetrics(loaded, tags) : {}),
      ...(trained.klMetrics ?? {}),
      ...(trained.optimMetrics ?? {}),
      ...(samplingSteps.length
        ? {
            'sampling_client/step_max': Math.max(...samplingSteps),
            'sampling_client/step_min': Math.min(...samplingSteps),
            'sampling_client/step_mean': samplingSteps.reduce((a, b) => a + b, 0) / samplingSteps.length,
          }
        : {}),
      ...(all_D.length ? await scopeSpan('compute_kl_sample_train', () => computeKlSampleTrain(all_D, trained.trainLogprobs_D)) : {}),
      ...tokenMetrics,
      ...postKl,
    };
    return { metrics, tokens: tokens.totals };
  }

  async function newSampler(cfg: RLConfig, modelPath: string): Promise<SamplingSession> {
    return callBackend('create sampling session', 'bad-path', () => backendOf(cfg).createSamplingSession({ modelPath }));
  }

  /** Logprob of every target token of each datum under a sampler (compute_logprobs[1:]), and what the requests used. */
  async function scoreAll(sampler: SamplingSession, data_D: Datum[]): Promise<{ logprobs_D: number[][]; usage: TokenUsage }> {
    return callBackend('compute_logprobs', 'session-lost', async () => {
      const scored = await scoreSequences(sampler, data_D.map(fullSequenceForScoring));
      return { logprobs_D: scored.logprobs.map(alignScoredLogprobs), usage: scored.usage };
    });
  }

  /** §2.10: a centred KL penalty against the reference model, added to the advantages; with the scoring's usage. */
  async function klPenalty(cfg: RLConfig, data_D: Datum[]): Promise<{ metrics: Record<string, number>; usage: TokenUsage }> {
    const ref = cfg.kl_reference_config!;
    const source = ref.load_checkpoint_path ? { modelPath: ref.load_checkpoint_path } : { baseModel: ref.base_model };
    const base = await callBackend('create reference sampler', 'bad-path', () => backendOf(cfg).createSamplingSession(source));
    const scored = await scoreAll(base, data_D);
    return { metrics: incorporateKlPenalty(data_D, scored.logprobs_D, cfg.kl_penalty_coef, cfg.kl_discount_factor), usage: scored.usage };
  }
}
