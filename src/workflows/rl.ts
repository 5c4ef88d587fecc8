// RL on verifiable rewards (cookbook-spec §2.9). Each step: evaluate on the current sampler when
// due, get the step's trajectory groups — sync: every group of batch i sampled now, in parallel;
// async: the first fresh groups off the off-policy queue — then train on them and save the sampler
// weights the next rollouts sample from.
import type { RLConfig } from '../cookbook/config/rl.js';
import { RolloutErrorCounter, type RolloutErrorCounterState } from '../cookbook/rl/rollouts.js';
import { cumulativeTokenMetrics, NO_TOKEN_TOTALS, NO_TOKENS, TokenTracker, tokenLoopState, tokenTotalsFromLoopState, type TokenTotals } from '../cookbook/token-usage.js';
import { CancellationScope, log, patched } from '@temporalio/workflow';
import type { RLPlan, RLTrainResult, RolloutGroupResult } from '../activities/types.js';
import { emptyOffPolicyState, OffPolicyRollouts, type OffPolicyState } from './rl-off-policy.js';
import { AsyncRollouts } from './rl-async-rollouts.js';
import { TrainingRun, type RunInput, type RunResult } from './shared/training-run.js';

export type RLInput = RunInput<RLConfig, RLPlan>;

/** What RL carries besides the model: error counts, the next sampler, the off-policy queue, token totals. */
interface RLState {
  errors: RolloutErrorCounterState;
  sampler?: { path: string; step: number };
  offPolicy?: OffPolicyState;
  /** Running token totals (absent from states recorded before they existed: none counted). */
  tokens?: TokenTotals;
  /** Async: the initial checkpoint (0.6.1's `{start_batch:06d}`) is saved. */
  initialSaved?: true;
  /** Async: the step at which no group was left to train (the data ran out before end_batch). */
  dataEndedAt?: number;
}

const pad = (n: number) => String(n).padStart(6, '0');
/** Streaming steps whose substeps are their own activities (histories before it trained a streaming step in one). */
const STREAM_SUBSTEPS_PATCH = 'rl-stream-substeps';
/**
 * Async sampling as 0.6.1 (rl-async-rollouts.ts): oldest groups first, none dropped as stale,
 * `groups_per_batch × (max_steps_off_policy + 1)` rollouts in flight, none past end_batch.
 * Histories before it ran OffPolicyRollouts (stale groups requeued, `groups_per_batch` in flight).
 */
const ASYNC_061_PATCH = 'rl-async-0.6.1';
/**
 * The rest of 0.6.1's do_async_training: the initial checkpoint before the first step; constant-
 * reward groups dropped as they complete (they take no place in a step); training ends when the
 * data runs out before end_batch; streaming minibatches. Histories before it ran rl-async-0.6.1 alone.
 */
const ASYNC_061_FULL_PATCH = 'rl-async-0.6.1-full';
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export async function rlWorkflow(input: RLInput): Promise<RunResult> {
  const run = new TrainingRun<RLConfig, RLPlan>('rl', input);
  const { acts } = run;
  const cfg = input.config;
  const async = cfg.async_config;

  if (!input.plan) await acts.initRun({ run: input.run, config: cfg });
  const plan = input.plan ?? (await acts.rlPrepare({ run: input.run }));
  input.plan = plan;
  // num_epochs passes over the dataset (configs recorded before the field existed ran one).
  const totalBuilders = plan.nBatches * plan.groupsPerBatch * (cfg.num_epochs ?? 1);
  const stream = cfg.stream_minibatch_config;
  // As 0.6.1: with streaming minibatches an async step trains the stream config's groups_per_batch.
  const groupsPerStep = async ? (stream?.groups_per_batch ?? async.groups_per_batch) : plan.groupsPerBatch;
  const oldestFirst = async ? patched(ASYNC_061_PATCH) : false;
  const fullAsync = oldestFirst ? patched(ASYNC_061_FULL_PATCH) : false;
  // 0.6.1's end_batch (_resolve_end_batch): the dataloader hands out that many dataset batches and
  // training stops after that many steps, a last smaller one taking what is left.
  const endBatch = Math.min(plan.nBatches * (cfg.num_epochs ?? 1), cfg.max_steps ?? Infinity);
  const startStep = cfg.continue_from?.next_step ?? 0;
  const asyncBuilders = oldestFirst ? endBatch * plan.groupsPerBatch : totalBuilders;
  // Full 0.6.1: up to end_batch steps, fewer when the data runs out first (dataEndedAt).
  const totalSteps = fullAsync
    ? endBatch
    : oldestFirst
      ? Math.min(endBatch, Math.ceil(asyncBuilders / groupsPerStep))
      : Math.min(Math.floor(totalBuilders / groupsPerStep), cfg.max_steps ?? Infinity);
  const initialState = startState(cfg, asyncBuilders, plan.groupsPerBatch);
  run.state.custom ??= JSON.parse(JSON.stringify(initialState));
  const state = () => run.state.custom as RLState;
  const tokens = () => state().tokens ?? NO_TOKEN_TOTALS;

  const rollout = (batch: number, group: number, samplerPath: string, samplingStep: number, attempt = 0) =>
    acts.rlRolloutGroup.executeWithOptions({ summary: `rollout batch ${batch} group ${group}${attempt ? ` (attempt ${attempt + 1})` : ''} on weights of step ${samplingStep}` }, [
      { run: input.run, step: batch, group, samplerPath, samplingStep, attempt, ...(fullAsync && cfg.remove_constant_reward_groups ? { dropConstantReward: true } : {}) },
    ]);

  // Async mode: the sampler in use when a rollout starts is whatever is current then.
  let current = { path: '', step: -1 };
  let queue: OffPolicyRollouts | undefined;
  let slots: AsyncRollouts | undefined;
  const asyncRollouts = (): AsyncRollouts => {
    const st = state().offPolicy!;
    // A restore or continue-as-new replaces the state object: rebuild the queue around it.
    if (!slots || slots.state !== st) {
      slots = new AsyncRollouts(st, {
        totalBuilders: asyncBuilders,
        groupsPerDatasetBatch: plan.groupsPerBatch,
        slots: groupsPerStep * (async!.max_steps_off_policy + 1),
        launch: (batch, group, attempt) => rollout(batch, group, current.path, current.step, attempt),
      });
    }
    slots.resync(run.state.recoveries);
    return slots;
  };
  const offPolicyQueue = (): OffPolicyRollouts => {
    const st = state().offPolicy!;
    // A restore or continue-as-new replaces the state object: rebuild the queue around it.
    if (!queue || queue.state !== st) {
      queue = new OffPolicyRollouts(st, {
        totalBuilders,
        groupsPerDatasetBatch: plan.groupsPerBatch,
        concurrency: async!.groups_per_batch,
        maxStepsOffPolicy: async!.max_steps_off_policy,
        launch: (batch, group, attempt) => rollout(batch, group, current.path, current.step, attempt),
      });
    }
    queue.resync(run.state.recoveries);
    return queue;
  };

  async function groupsFor(step: number, samplerPath: string): Promise<{ groups: RolloutGroupResult[]; metrics: Record<string, number> }> {
    if (!async) {
      const groups = await Promise.all(Array.from({ length: plan.groupsPerBatch }, (_, group) => rollout(step, group, samplerPath, step)));
      return { groups, metrics: {} };
    }
    current = { path: samplerPath, step };
    if (oldestFirst) {
      const { groups, dropped } = await asyncRollouts().collect(groupsPerStep);
      return { groups: [...groups, ...dropped], metrics: samplingClientMetrics(step, groups) };
    }
    const q = offPolicyQueue();
    const collected = await q.collect(step, groupsPerStep);
    q.fill(); // keep sampling while this step trains
    const steps = collected.groups.map((g) => g.samplingStep);
    const metrics: Record<string, number> = steps.length
      ? { 'sampling_client/step_max': Math.max(...steps), 'sampling_client/step_min': Math.min(...steps), 'sampling_client/step_mean': mean(steps) }
      : {};
    return { groups: [...collected.groups, ...collected.dropped], metrics };
  }

  /**
   * 0.6.1's SamplingClientReuse: once every rollout has completed, a step whose weights nothing will
   * sample (no eval before the next step or of the final weights, no post-update KL, no periodic
   * checkpoint due) saves no sampler weights; the current ones stand in for them.
   */
  function reuseSampler(step: number): boolean {
    if (!oldestFirst || !slots?.finished || cfg.compute_post_kl) return false;
    const last = step + 1 >= totalSteps;
    if (cfg.eval_every > 0 && (last || run.shouldEval(step + 1))) return false;
    const every = cfg.save_every ?? 0;
    return every === 0 || ((step + 1) % every !== 0 && step % every !== 0);
  }

  /** Every evaluator due at this step, in parallel on the pre-update sampler; merged without prefix. */
  function evaluate(step: number, samplerPath: string): Promise<Array<{ metrics: Record<string, number> }>> {
    if (!run.shouldEval(step)) return Promise.resolve([]);
    const testSet = plan.hasTest ? [acts.rlEval.executeWithOptions({ summary: `eval before step ${step}` }, [{ run: input.run, step, samplerPath }])] : [];
    return Promise.all([...testSet, ...run.customSamplingEvals(step, samplerPath)]);
  }

  /**
   * A streaming-minibatch step whose substeps train while the step still samples (the reference's
   * do_sync_training_with_stream_minibatch): every group samples on the step's sampler, as in the
   * reference, and substep i trains, after substep i−1, as soon as its own groups are in. The
   * reference fills minibatches in completion order; here group positions decide (substep i holds
   * groups i·k … i·k+k−1, k = groups_per_batch / num_substeps), so a recovered or replayed step
   * trains exactly what the uninterrupted one did, whichever rollouts finish first.
   */
  async function streamingStep(step: number, samplerPath: string, lr: number, preStepMetrics: Record<string, number>): Promise<void> {
    const evals = evaluate(step, samplerPath);
    const rollouts = Array.from({ length: plan.groupsPerBatch }, (_, group) => rollout(step, group, samplerPath, step));
    const everything = Promise.allSettled([evals, ...rollouts]);
    const perSubstep = plan.groupsPerBatch / cfg.num_substeps;
    const substeps: string[] = [];
    try {
      for (let substep = 0; substep < cfg.num_substeps; substep++) {
        const groups = await Promise.all(rollouts.slice(substep * perSubstep, (substep + 1) * perSubstep));
        const kept = groups.filter((g) => g.ref !== null).length;
        if (kept === 0) continue;
        const summary = `train step ${step} substep ${substep} on ${kept} groups`;
        const { ref } = await run.train(acts.rlStreamSubstep, { run: input.run, step, substep, groups, learningRate: lr }, summary);
        substeps.push(ref);
      }
    } catch (err) {
      // Nothing of a failed step is left running when the run recovers (and replays it whole).
      await everything;
      throw err;
    }
    const [evalResults, groups] = await Promise.all([evals, Promise.all(rollouts)]);
    Object.assign(preStepMetrics, ...evalResults.map((r) => r.metrics));
    await recordStep(step, samplerPath, preStepMetrics, groups, (errorMetrics) =>
      run.train(acts.rlStreamFinish, { run: input.run, step, substeps, preStepMetrics, errorMetrics, tokens: tokens() }, `finish step ${step}: sampler weights and metrics`),
    );
  }

  /**
   * An async step with streaming minibatches (0.6.1's do_train_step_streaming_and_get_sampling_client
   * in do_async_training): substep i trains, after substep i−1, the next groups_per_substep groups
   * to complete, whatever their sampler; groups filtered out are skipped, so every substep is full
   * until the data runs out (the last step is shorter; a step left with none ends training).
   */
  async function asyncStreamingStep(step: number, samplerPath: string, lr: number, preStepMetrics: Record<string, number>): Promise<void> {
    const evals = evaluate(step, samplerPath);
    current = { path: samplerPath, step };
    const slots = asyncRollouts();
    slots.beginStep();
    const perSubstep = groupsPerStep / cfg.num_substeps;
    const [trained, dropped, substeps]: [RolloutGroupResult[], RolloutGroupResult[], string[]] = [[], [], []];
    try {
      for (let substep = 0; substep < cfg.num_substeps; substep++) {
        const taken = await slots.take(perSubstep);
        dropped.push(...taken.dropped);
        if (taken.groups.length === 0) break;
        trained.push(...taken.groups);
        const summary = `train step ${step} substep ${substep} on ${taken.groups.length} groups`;
        const { ref } = await run.train(acts.rlStreamSubstep, { run: input.run, step, substep, groups: taken.groups, learningRate: lr }, summary);
        substeps.push(ref);
        if (taken.groups.length < perSubstep) break; // the data ran out: a shorter last step
      }
    } catch (err) {
      await Promise.allSettled([evals]);
      throw err;
    }
    Object.assign(preStepMetrics, ...(await evals).map((r) => r.metrics));
    if (trained.length === 0) return dataEnded(step, dropped);
    Object.assign(preStepMetrics, stalenessMetrics(step, trained));
    const tokensBefore = withDiscarded(tokens(), dropped);
    await recordStep(step, samplerPath, preStepMetrics, [...trained, ...dropped], (errorMetrics) =>
      run.train(acts.rlStreamFinish, { run: input.run, step, substeps, preStepMetrics, errorMetrics, tokens: tokensBefore }, `finish step ${step}: sampler weights and metrics`),
    );
  }

  /**
   * As 0.6.1 when a step finds no group left to train: training ends (a warning says how far it
   * got); the filtered groups' errors and sampling are counted, and the run closes at end_batch.
   */
  function dataEnded(step: number, dropped: RolloutGroupResult[]): void {
    const errors = countErrors(state().errors, dropped);
    run.state.custom = { ...state(), errors: errors.toJSON(), tokens: withDiscarded(tokens(), dropped), dataEndedAt: step } satisfies RLState;
    log.warn(
      `Async training ran out of data after ${step - startStep} of ${endBatch - startStep} steps. Each step trains ${groupsPerStep} groups that survive filtering and rollout errors, ` +
        'so steps run out before dataset batches do when groups are filtered or fail, or when dataset batches hold fewer groups than that. To train more steps, raise max_steps (and num_epochs, if it caps the run).',
    );
  }

  /** The initial checkpoint of 0.6.1's async training (state and sampler, `{start_batch:06d}`): the first rollouts sample from it. */
  async function initialCheckpoint(step: number): Promise<string> {
    const saved = await run.train(
      acts.saveCheckpoint,
      { run: input.run, name: pad(step), kind: 'both', ttlSeconds: cfg.ttl_seconds, row: { ...loopState(step - 1), next_step: step }, beforeFirstStep: true },
      `save ${pad(step)} (initial checkpoint)`,
    );
    run.state.custom = { ...state(), initialSaved: true } satisfies RLState;
    return saved.samplerPath!;
  }

  /** A step's groups are in: count their errors, then train (or, when none survived, just log the row). */
  async function recordStep(
    step: number,
    samplerPath: string,
    preStepMetrics: Record<string, number>,
    groups: RolloutGroupResult[],
    train: (errorMetrics: Record<string, number>) => Promise<RLTrainResult>,
  ): Promise<void> {
    const errors = countErrors(state().errors, groups);
    if (groups.every((g) => g.ref === null)) {
      // Nothing survived: no training, no checkpoint; the row records progress and errors (and, as
      // the reference's streaming loops, the step's zero token counts).
      const tokenMetrics = cfg.stream_minibatch_config ? new TokenTracker(tokens()).recordStep(NO_TOKENS) : {};
      await run.logMetrics(step, { ...preStepMetrics, ...tokenMetrics, ...errors.getMetrics() });
      run.state.custom = { ...state(), errors: errors.toJSON(), sampler: { path: samplerPath, step: step + 1 } } satisfies RLState;
      return;
    }
    const result = await train(errors.getMetrics());
    run.state.custom = { ...state(), errors: errors.toJSON(), sampler: { path: result.samplerPath, step: step + 1 }, tokens: result.tokens } satisfies RLState;
    run.setLastMetrics(result.metrics);
  }

  /** The reference's `_loop_state` of the checkpoint after `step`. */
  function loopState(step: number): Record<string, unknown> {
    return { batch: step + 1, ...tokenLoopState(tokens()) };
  }

  return run.run({
    // The step after the one that found the data gone is the end.
    get totalSteps() {
      const ended = state().dataEndedAt;
      return ended === undefined ? totalSteps : ended + 1;
    },
    lossKey: 'env/all/reward/total',
    createInitialModel: () => acts.createModel({ run: input.run }),
    initialCustom: initialState,
    // Error counts are cumulative (the rows' rollout_errors/*): a continued run goes on counting.
    resumeState: () => (state().errors.counts.length || state().errors.groupsSkipped ? { rollout_errors: state().errors } : undefined),
    beforeContinueAsNew: async () => {
      await queue?.drain();
      await slots?.drain();
    },
    // The restored state names sampler weights on the lost backend: the next step saves its own.
    afterFailover: () => {
      run.state.custom = { ...state(), sampler: undefined } satisfies RLState;
    },

    async runStep(step) {
      const sampler = state().sampler;
      const initialDue = fullAsync && !state().initialSaved && step === startStep;
      const samplerPath = sampler?.step === step ? sampler.path : initialDue ? await initialCheckpoint(step) : await run.saveSamplerWeights(`sampler_${pad(step)}`);
      const lr = run.learningRate(cfg.learning_rate, 1);
      const preStepMetrics: Record<string, number> = async
        ? { 'training_client/step': step, 'optim/lr': lr, 'progress/done_frac': (step + 1) / (oldestFirst ? endBatch : totalSteps) }
        : { 'progress/batch': step, 'optim/lr': lr, 'progress/done_frac': (step + 1) / totalSteps };
      // Once its first substep may train, a step runs to its end: a cancel takes effect after it,
      // so the final checkpoint holds whole steps.
      if (stream && fullAsync) return CancellationScope.nonCancellable(() => asyncStreamingStep(step, samplerPath, lr, preStepMetrics));
      if (stream && !async && patched(STREAM_SUBSTEPS_PATCH)) {
        return CancellationScope.nonCancellable(() => streamingStep(step, samplerPath, lr, preStepMetrics));
      }
      const [evalResults, { groups, metrics: samplingMetrics }] = await Promise.all([evaluate(step, samplerPath), groupsFor(step, samplerPath)]);
      Object.assign(preStepMetrics, samplingMetrics, ...evalResults.map((r) => r.metrics));
      if (fullAsync && groups.every((g) => g.ref === null)) return dataEnded(step, groups);
      // Streaming minibatches are cut by group position, so dropped groups keep their places.
      const trainable = groups.filter((g) => g.ref !== null);
      const keepSampler = reuseSampler(step) ? { keepSampler: samplerPath } : {};
      await recordStep(step, samplerPath, preStepMetrics, groups, (errorMetrics) =>
        run.train(
          acts.rlTrain,
          { run: input.run, step, groups: cfg.stream_minibatch_config ? groups : trainable, learningRate: lr, preStepMetrics, errorMetrics, tokens: withDiscarded(tokens(), groups), ...keepSampler },
          `train step ${step} on ${trainable.length} groups`,
        ),
      );
    },

    // As the reference: the checkpoint after step i is named i+1 and resumes at batch i+1; its
    // loop state carries the token totals, which a recovery or a continued run goes on from.
    periodicCheckpoint: (step, every) => ((step + 1) % every === 0 && state().dataEndedAt !== step ? { name: pad(step + 1), row: loopState(step) } : undefined),
    loopState,
    finalRow: () => ({ batch: run.state.step, ...tokenLoopState(tokens()) }),
    // As the reference: the totals (dropped groups' sampling included) at step end_batch, even if no step ran.
    closingMetrics: () => {
      // A run whose data ran out closes at end_batch all the same, as 0.6.1's main().
      if (state().dataEndedAt !== undefined) run.state.step = totalSteps;
      return cumulativeTokenMetrics(tokens());
    },
  });
}

/**
 * RL's state at the run's first step. A continued run (`cookbook continue`) goes on counting its
 * parent's rollout errors; in async mode its dataloader starts at dataset batch `next_step`, as the
 * reference's does on resume: rollouts the parent had in flight or ready are not carried over.
 */
function startState(cfg: RLConfig, totalBuilders: number, groupsPerDatasetBatch: number): RLState {
  const from = cfg.continue_from;
  const errors = (from?.resume_state?.rollout_errors as RolloutErrorCounterState | undefined) ?? { counts: [], groupsSkipped: 0 };
  // As the reference's resume: the totals the checkpoint's loop state carried (none: zero).
  const tokens = tokenTotalsFromLoopState({ cumulative_tokens: from?.cumulative_tokens, discarded_tokens: from?.discarded_tokens });
  if (!cfg.async_config) return { errors, tokens };
  const next = Math.min((from?.next_step ?? 0) * groupsPerDatasetBatch, totalBuilders);
  return { errors, tokens, offPolicy: { ...emptyOffPolicyState(), next } };
}

/** 0.6.1's compute_sampling_client_metrics (its sampler steps) and the step's async/staleness_*. */
function samplingClientMetrics(step: number, groups: RolloutGroupResult[]): Record<string, number> {
  if (groups.length === 0) return {};
  const steps = groups.map((g) => g.samplingStep);
  return {
    'sampling_client/step_max': Math.max(...steps),
    'sampling_client/step_min': Math.min(...steps),
    'sampling_client/step_mean': mean(steps),
    ...stalenessMetrics(step, groups),
  };
}

/** 0.6.1's async/staleness_*: how many updates behind the step's weights its groups were sampled. */
function stalenessMetrics(step: number, groups: RolloutGroupResult[]): Record<string, number> {
  const staleness = groups.map((g) => step - g.samplingStep);
  return { 'async/staleness_max': Math.max(...staleness), 'async/staleness_min': Math.min(...staleness), 'async/staleness_mean': mean(staleness) };
}

/** The totals with the sampling of groups dropped for a constant reward as they completed (async). */
function withDiscarded(totals: TokenTotals, groups: RolloutGroupResult[]): TokenTotals {
  const discarded = groups.flatMap((g) => (g.discarded ? [g.discarded] : []));
  if (discarded.length === 0) return totals;
  const tracker = new TokenTracker(totals);
  for (const usage of discarded) tracker.recordDiscardedSampling(usage);
  return tracker.totals;
}

function countErrors(before: RolloutErrorCounterState, groups: RolloutGroupResult[]): RolloutErrorCounter {
  const counter = new RolloutErrorCounter(before);
  for (const g of groups) {
    if (g.absent) continue; // a short batch's empty slot: not a skipped group
    counter.ingest(g.ref === null ? null : { rolloutErrors: g.errorTypes.map((errorType) => ({ errorType, errorMessage: '' })) });
  }
  return counter;
}
