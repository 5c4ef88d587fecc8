// The machinery every training workflow shares: run state, the per-model sequence-id cursor,
// controls (stop, pause, resume, set, progress), recovery from a lost model, visibility,
// continue-as-new, and pipelined steps (the next step's requests queued on the server while the
// current step's results are collected). When to checkpoint and what is kept is the checkpoint
// policy's (checkpoint-policy.ts). A paradigm's workflow supplies only its step (whole, or as
// submit + finish to be pipelined).
import {
  ActivityFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, FailoverRecord, ModelRef, SeqUse } from '../../activities/types.js';
import { NON_RETRYABLE_ERROR_TYPES } from '../../activities/types.js';
import type { RunRef } from '../../cookbook/run-store.js';
import {
  type CheckpointRef,
  type HotSettings,
  type Progress,
  type RunStatus,
  pauseSignal,
  progressQuery,
  resumeSignal,
  hotSettingsProblem,
  setSignal,
  setUpdate,
  stopSignal,
  validateHotSettings,
} from './messages.js';
import { StatusKey, StepKey } from './search-attributes.js';
import { CheckpointPolicy } from './checkpoint-policy.js';
import { isBackendLost, isModelLost } from './failures.js';

export interface DurabilityConfig {
  heartbeat_timeout_s: number;
  steps_per_workflow_run: number;
  step_timeout_s: number;
}

/** Config fields the shared machinery reads; each paradigm's config has them. */
export interface RunConfig {
  model_name: string;
  save_every: number;
  eval_every: number;
  ttl_seconds: number | null;
  durability: DurabilityConfig;
  /** Custom sampling evaluators (absent from configs recorded before they existed). */
  evaluators?: Array<{ name: string | null }>;
  /** Evaluators run every `infrequent_eval_every` steps (SL, DPO; absent from configs recorded before they existed). */
  infrequent_evaluators?: Array<{ name: string | null }>;
  infrequent_eval_every?: number;
  /** Periodic checkpoints on tokens trained or workflow seconds since the last, and saved beside the next steps (SL). */
  save_every_tokens?: number;
  save_every_seconds?: number;
  async_periodic_saves?: boolean;
  /** Resume-only checkpoints (absent from configs recorded before they existed: none). */
  rolling_save_every?: number;
  rolling_ttl_seconds?: number | null;
  /** `cookbook continue`: the parent's checkpoint (its state is `load_checkpoint_path`) and the position it reached. */
  continue_from?: { name: string; next_step: number; elapsed_tokens: number; resume_state?: Record<string, unknown> | null } | null;
  load_checkpoint_path?: string | null;
  base_url?: string | null;
  /** Training backends to move to when `base_url` is lost (absent from configs recorded before it existed). */
  failover?: { base_urls: string[]; after_s: number } | null;
}

/** Everything a workflow carries across continue-as-new. Small by construction. */
export interface RunState {
  step: number;
  model?: ModelRef;
  lastCheckpoint?: CheckpointRef;
  /** A few committed checkpoints before the last, newest last: where recovery falls back to if the last is damaged. */
  olderCheckpoints?: CheckpointRef[];
  elapsedTokens: number;
  hot: HotSettings;
  status: RunStatus;
  paused: boolean;
  stopRequested: boolean;
  stopReason?: string;
  recoveries: number;
  lastMetrics: Record<string, number>;
  /** Paradigm state (e.g. RL's rollout error counts); rolled back with the model on recovery. */
  custom?: unknown;
  /** State path of the newest rolling checkpoint: deleted once the next one (or the final) is saved. */
  rollingStatePath?: string;
  /** Moves to other training backends so far (the run trains on the last one's `to`). */
  failovers?: FailoverRecord[];
  /** Elapsed tokens at the last periodic save (with `save_every_tokens`). */
  savedTokens?: number;
  /** Workflow time (ms) of the last periodic save or the run's start (with `save_every_seconds`). */
  savedAt?: number;
}

export interface RunInput<C, P> {
  run: RunRef;
  config: C;
  /** Present after continue-as-new: the plan made at the start and the state reached. */
  plan?: P;
  state?: RunState;
}

export interface RunResult {
  status: 'completed' | 'stopped';
  steps: number;
  finalCheckpoint?: CheckpointRef;
  lastMetrics: Record<string, number>;
  logPath: string;
  recoveries: number;
}

export interface LoopSpec {
  totalSteps: number;
  /** Runs step `step`: its evals, the training call(s) and its metrics row. */
  runStep(step: number): Promise<void>;
  /** The periodic checkpoint due after `step` with cadence `every` (>0), if any: name and row fields. */
  periodicCheckpoint(step: number, every: number): { name: string; row: Record<string, unknown> } | undefined;
  /** checkpoints.jsonl fields of the final checkpoint. */
  finalRow(): Record<string, unknown>;
  /**
   * The reference's loop_state of a checkpoint after `step` (position, token totals), recorded in a
   * rolling checkpoint's row as in a periodic one's. Undefined: the row says only `rolling`.
   */
  loopState?(step: number): Record<string, unknown>;
  /**
   * The metrics row the reference logs after its last step, at step = the end (RL's token totals):
   * written just before the final checkpoint. Undefined: no such row.
   */
  closingMetrics?(): Record<string, number>;
  /** The training loss shown in the UI's one-line summary. */
  lossKey: string;
  /** Model to (re)start from when there is no committed checkpoint yet. */
  createInitialModel(): Promise<ModelRef>;
  /** Paradigm state at step 0 (restored when a run restarts from scratch). */
  initialCustom?: unknown;
  /** Settles work the paradigm keeps in flight across steps, before continue-as-new. */
  beforeContinueAsNew?(): Promise<void>;
  /** After a failover's restore: forget what only the lost backend held (RL's next sampler weights). */
  afterFailover?(): void;
  /** Pipelined steps (the reference's `submit_ahead`), for paradigms whose step splits in two. */
  pipeline?: PipelineSpec;
  /**
   * Paradigm state a run continued from a checkpoint must start with to go on as one longer run
   * (e.g. DPO's reference weights): recorded as `resume_state` in every checkpoint row, handed
   * back by `cookbook continue` as `continue_from.resume_state`. Undefined: nothing to record.
   */
  resumeState?(): Record<string, unknown> | undefined;
}

/**
 * A step split into submission and collection, so that step N+1's training requests are queued on
 * the server while step N's are computed. Sequence ids order them there, so N+1 runs on N's
 * weights exactly as if it had been submitted afterwards.
 */
export interface PipelineSpec {
  /** Steps submitted beyond the one being collected (0: unpipelined, `runStep` runs the steps). */
  submitAhead: number;
  /** Runs the evals due before `step` and submits its training requests; returns what `finish` needs. */
  submit(step: number): Promise<unknown>;
  /** Awaits the step's results and writes its metrics row. */
  finish(step: number, submitted: unknown): Promise<void>;
  /** Something must see step−1's results before `step` is submitted (e.g. an eval on its weights). */
  needsResultsBefore(step: number): boolean;
  /** Tokens a submitted step trains, known before its results (lets `save_every_tokens` decide while it runs). */
  submittedTokens?(submitted: unknown): number | undefined;
}

interface InFlightStep {
  step: number;
  submitted: unknown;
  /** Elapsed tokens once this step is done, if known at submission. */
  tokensAfter?: number;
}

const SEARCH_ATTRIBUTE_EVERY_STEPS = 10;
/** The closing metrics row (RL's token totals) before the final checkpoint. */
const CLOSING_ROW_PATCH = 'closing-metrics-row';

export function activitiesFor(d: DurabilityConfig) {
  return proxyActivities<Activities>({
    startToCloseTimeout: `${d.step_timeout_s}s`,
    heartbeatTimeout: `${d.heartbeat_timeout_s}s`,
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 2,
      maximumInterval: '20s',
      nonRetryableErrorTypes: NON_RETRYABLE_ERROR_TYPES,
    },
  });
}


export class TrainingRun<C extends RunConfig, P> {
  readonly state: RunState;
  readonly acts: ReturnType<typeof activitiesFor>;
  private stepsThisWorkflowRun = 0;
  /** The last step whose settings are fixed (it has started); a `set` applies from the one after. */
  private lastFixedStep = -1;
  /** Pipelined steps submitted and not yet collected, oldest first. */
  private inFlight: InFlightStep[] = [];
  private totalSteps = 0;
  private lastUpsertedStep = -1;
  private lastUpsertedStatus?: RunStatus;
  private resumeState?: () => Record<string, unknown> | undefined;
  private readonly checkpoints: CheckpointPolicy;

  constructor(
    readonly kind: string,
    readonly input: RunInput<C, P>,
  ) {
    this.acts = activitiesFor(input.config.durability);
    const from = input.config.continue_from ?? undefined;
    this.state = input.state ?? {
      step: from?.next_step ?? 0,
      elapsedTokens: from?.elapsed_tokens ?? 0,
      // A continued run falls back to its parent's checkpoint until it commits one of its own.
      lastCheckpoint: from && input.config.load_checkpoint_path
        ? { name: from.name, step: from.next_step - 1, statePath: input.config.load_checkpoint_path, elapsedTokens: from.elapsed_tokens }
        : undefined,
      hot: { lr_multiplier: 1, eval_every: input.config.eval_every, save_every: input.config.save_every },
      status: 'starting',
      paused: false,
      stopRequested: false,
      recoveries: 0,
      lastMetrics: {},
    };
    this.checkpoints = new CheckpointPolicy(this, () => this.resumeState?.());
    this.installHandlers();
  }

  get model(): ModelRef {
    if (!this.state.model) throw new Error('no model yet');
    return this.state.model;
  }

  /** Calls an activity that uses the training model and advances the sequence-id cursor by what it consumed. */
  async train<A extends { model: ModelRef }, R extends SeqUse>(
    activity: ((args: A) => Promise<R>) & { executeWithOptions(o: object, a: [A]): Promise<R> },
    args: Omit<A, 'model'>,
    summary: string,
  ): Promise<R> {
    const model = this.model;
    const result = await activity.executeWithOptions({ summary }, [{ ...args, model } as A]);
    this.state.model = { ...model, nextSeqId: model.nextSeqId + result.seqIdsUsed };
    return result;
  }

  /** Drives the loop to the end (or a stop), then saves the final checkpoint. */
  async run(spec: LoopSpec): Promise<RunResult> {
    this.totalSteps = spec.totalSteps;
    this.resumeState = spec.resumeState;
    // Histories recorded before pipelining replay without the marker, on the unpipelined loop.
    const pipelined = spec.pipeline && spec.pipeline.submitAhead > 0 && patched('submit-ahead') ? spec.pipeline : undefined;
    if (!this.state.model) this.state.model = await spec.createInitialModel();
    // On a server that ignores seq_id nothing is queued ahead: the next step's requests could run
    // before this one's optim_step (activities/unsequenced.ts). Known from the model, which the
    // activity that created it learned it for; it changes only with the model (a failover).
    const pipelineNow = () => (this.state.model?.seqIdIgnored ? undefined : pipelined);
    if (pipelined && !pipelineNow()) log.warn('training server ignores seq_id: steps run one at a time (submit_ahead 0)');
    this.checkpoints.start();
    this.setStatus(this.state.paused ? 'paused' : 'running');
    try {
      for (;;) {
        if (this.inFlight.length === 0) {
          await this.maybeContinueAsNew(spec);
          if (!this.state.stopRequested && this.state.step < spec.totalSteps) {
            await this.waitWhilePaused();
          }
          if (this.state.stopRequested || this.state.step >= spec.totalSteps) {
            if (await this.withRecovery(spec, () => this.saveFinal(spec))) break;
            continue;
          }
        }
        const step = this.state.step;
        const pipeline = pipelineNow();
        if (pipeline) {
          if (await this.withRecovery(spec, () => this.pipelinedStep(spec, pipeline))) await this.withRecovery(spec, () => this.maybeSavePeriodic(step, spec));
          continue;
        }
        this.lastFixedStep = step;
        const done = await this.withRecovery(spec, () => spec.runStep(step));
        if (done) {
          this.completeStep(step, spec.lossKey);
          if (await this.withRecovery(spec, () => this.maybeSavePeriodic(step, spec))) continue;
        }
      }
    } catch (err) {
      if (isCancellation(err)) {
        // A cancel from the UI or CLI still leaves a final checkpoint of what was trained, and a
        // step already queued on the server is part of what was trained: collect it first.
        await CancellationScope.nonCancellable(async () => {
          if (pipelined && this.inFlight.length > 0 && !(await this.withRecovery(spec, () => this.drain(spec, pipelined)))) return;
          await this.withRecovery(spec, () => this.saveFinal(spec));
        });
      } else {
        this.setStatus('failed');
      }
      throw err;
    }
    const status = this.state.stopRequested ? 'stopped' : 'completed';
    this.setStatus(status);
    await condition(allHandlersFinished);
    return {
      status,
      steps: this.state.step,
      finalCheckpoint: this.state.lastCheckpoint,
      lastMetrics: this.state.lastMetrics,
      logPath: this.input.run.logPath,
      recoveries: this.state.recoveries,
    };
  }

  /**
   * Completes the oldest step (submitting it first if nothing is in flight) while the next steps'
   * requests are submitted, as far as `submitAhead` allows and nothing needs to see the oldest
   * step's result first.
   */
  private async pipelinedStep(spec: LoopSpec, p: PipelineSpec): Promise<void> {
    if (this.inFlight.length === 0) await this.submitStep(p, this.state.step);
    const oldest = this.inFlight[0];
    const submitAhead = async () => {
      for (let next = oldest.step + this.inFlight.length; this.inFlight.length <= p.submitAhead && this.maySubmitAhead(spec, p, next); next++) {
        await this.submitStep(p, next);
      }
    };
    const [finished, ahead] = await Promise.allSettled([p.finish(oldest.step, oldest.submitted), submitAhead()]);
    // Both settled before acting on a failure, so the state is never changed under a running activity.
    const failure = [finished, ahead].find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) {
      const lost = [finished, ahead].find((r): r is PromiseRejectedResult => r.status === 'rejected' && isModelLost(r.reason));
      throw (lost ?? failure).reason;
    }
    this.inFlight.shift();
    this.completeStep(oldest.step, spec.lossKey);
  }

  /** A submission is never cancelled halfway: the server may hold its requests, and the cursor must count them. */
  private async submitStep(p: PipelineSpec, step: number): Promise<void> {
    this.lastFixedStep = step;
    const before = this.inFlight.length > 0 ? this.inFlight.at(-1)!.tokensAfter : this.state.elapsedTokens;
    const submitted = await CancellationScope.nonCancellable(() => p.submit(step));
    const tokens = p.submittedTokens?.(submitted);
    this.inFlight.push({ step, submitted, tokensAfter: before === undefined || tokens === undefined ? undefined : before + tokens });
  }

  /**
   * Step `next` may be queued behind the in-flight ones unless something must happen between them:
   * a checkpoint (so that it holds exactly the steps its row names), an eval on the weights between
   * them, a stop or pause, continue-as-new, or the end of the run.
   */
  private maySubmitAhead(spec: LoopSpec, p: PipelineSpec, next: number): boolean {
    return (
      next < spec.totalSteps &&
      !this.state.stopRequested &&
      !this.state.paused &&
      !this.checkpoints.dueAfter(next - 1, spec, this.inFlight.at(-1)?.tokensAfter) &&
      !p.needsResultsBefore(next) &&
      this.stepsThisWorkflowRun + this.inFlight.length < this.input.config.durability.steps_per_workflow_run &&
      !workflowInfo().continueAsNewSuggested
    );
  }

  /** Collects every in-flight step in order (before a final checkpoint on cancel). */
  private async drain(spec: LoopSpec, p: PipelineSpec): Promise<void> {
    while (this.inFlight.length > 0) {
      const oldest = this.inFlight[0];
      await p.finish(oldest.step, oldest.submitted);
      this.inFlight.shift();
      this.completeStep(oldest.step, spec.lossKey);
    }
  }

  /** Learning rate of a step: schedule × the user's hot multiplier. */
  learningRate(base: number, scheduleMultiplier: number): number {
    return base * scheduleMultiplier * this.state.hot.lr_multiplier;
  }

  shouldEval(step: number): boolean {
    const every = this.state.hot.eval_every;
    return every > 0 && step % every === 0;
  }

  /** The reference's infrequent evaluators are due before `step` (only if there are any). */
  shouldInfrequentEval(step: number): boolean {
    const every = this.input.config.infrequent_eval_every ?? 0;
    return !!this.input.config.infrequent_evaluators?.length && every > 0 && step % every === 0;
  }

  /** The run's custom sampling evaluators (§7.5) on a sampler: one activity each, all in parallel. */
  customSamplingEvals(step: number, samplerPath: string, set: 'evaluators' | 'infrequent_evaluators' = 'evaluators'): Array<Promise<{ metrics: Record<string, number> }>> {
    const infrequent = set === 'infrequent_evaluators';
    return (this.input.config[set] ?? []).map((e, index) =>
      this.acts.customSamplingEval.executeWithOptions({ summary: `${infrequent ? 'infrequent ' : ''}evaluator ${e.name ?? index} before step ${step}` }, [
        { run: this.input.run, step, samplerPath, index, ...(infrequent ? { set } : {}) },
      ]),
    );
  }

  /**
   * The custom sampling evaluators (or the infrequent ones) on one sampler snapshot of the current
   * (pre-step) weights, merged; none configured: no snapshot and no metrics. (SL and DPO, whose
   * steps sample nothing.)
   */
  async customEvalsOnSnapshot(step: number, set: 'evaluators' | 'infrequent_evaluators' = 'evaluators'): Promise<Record<string, number>> {
    const metrics: Record<string, number> = {};
    if (!this.input.config[set]?.length) return metrics;
    const prefix = set === 'evaluators' ? 'eval' : 'eval_infrequent';
    const samplerPath = await this.saveSamplerWeights(`${prefix}_${String(step).padStart(6, '0')}`);
    for (const r of await Promise.all(this.customSamplingEvals(step, samplerPath, set))) Object.assign(metrics, r.metrics);
    return metrics;
  }

  /** Records a metrics row through the logMetrics activity (used for rows no step writes). */
  async logMetrics(step: number, metrics: Record<string, number>): Promise<void> {
    await this.acts.logMetrics({ run: this.input.run, step, metrics });
  }

  setLastMetrics(metrics: Record<string, number>): void {
    this.state.lastMetrics = metrics;
  }

  /** Runs `fn`; if the backend lost the model, restores the last checkpoint and returns false. */
  private async withRecovery(spec: LoopSpec, fn: () => Promise<unknown>): Promise<boolean> {
    try {
      await fn();
      return true;
    } catch (err) {
      const failover = isBackendLost(err) ? this.nextBackend() : undefined;
      if (!isModelLost(err) && failover === undefined) throw err;
      // Steps queued on the lost model are gone with it; the restore replays them.
      this.inFlight = [];
      if (failover !== undefined) await this.failOver(spec, failover, err);
      else await this.recover(spec);
      return false;
    }
  }

  /** The backend a failover moves to, if the run's `failover` has one left. */
  private nextBackend(): string | undefined {
    return this.input.config.failover?.base_urls[this.state.failovers?.length ?? 0];
  }

  /**
   * The training backend stopped answering: the run goes on at `to` from its last checkpoint (the
   * activities import it there from the run store's mirror), and says so in failovers.json.
   */
  private async failOver(spec: LoopSpec, to: string, err: unknown): Promise<void> {
    const from = this.input.run.trainingBaseUrl ?? this.input.config.base_url ?? null;
    const reason = err instanceof ActivityFailure && err.cause ? err.cause.message : String(err);
    log.warn('training backend lost: failing over', { from, to, reason });
    // Every activity from now on is handed the new backend with the run.
    this.input.run = { ...this.input.run, trainingBaseUrl: to };
    await this.recover(spec);
    spec.afterFailover?.();
    const record: FailoverRecord = { step: this.state.step, from, to, checkpoint: this.state.lastCheckpoint?.name ?? null, reason };
    this.state.failovers = [...(this.state.failovers ?? []), record];
    await this.acts.recordFailovers({ run: this.input.run, failovers: this.state.failovers });
    this.publish();
  }

  private async recover(spec: LoopSpec): Promise<void> {
    const before = this.state.status;
    this.setStatus('recovering');
    const ckpt = await this.checkpoints.restoreLastGood();
    if (ckpt) {
      this.state.step = ckpt.step + 1;
      this.state.elapsedTokens = ckpt.elapsedTokens;
      // A continued run's parent checkpoint carries no workflow state: the run's start state is its state.
      const custom = ckpt.custom ?? spec.initialCustom;
      this.state.custom = custom === undefined ? undefined : JSON.parse(JSON.stringify(custom));
    } else {
      this.state.model = await spec.createInitialModel();
      this.state.step = this.input.config.continue_from?.next_step ?? 0;
      this.state.elapsedTokens = this.input.config.continue_from?.elapsed_tokens ?? 0;
      this.state.custom = spec.initialCustom === undefined ? undefined : JSON.parse(JSON.stringify(spec.initialCustom));
    }
    await this.acts.rollBackMetrics({ run: this.input.run, fromStep: this.state.step });
    this.lastFixedStep = this.state.step - 1; // the replayed steps take the settings current when they start
    this.state.recoveries += 1;
    this.setStatus(before === 'recovering' ? 'running' : before);
  }

  private completeStep(step: number, lossKey: string): void {
    this.state.step = step + 1;
    this.stepsThisWorkflowRun += 1;
    this.publish(lossKey);
  }

  private async maybeSavePeriodic(step: number, spec: LoopSpec): Promise<void> {
    // A later step already queued was submitted when no checkpoint was due after this one (a `set`
    // of save_every since then applies from the steps not yet started).
    if (this.inFlight.length > 0) return;
    await this.checkpoints.saveDue(step, spec);
  }

  /** Sampler weights of the current model under `name` (not a checkpoint row): what rollouts sample from. */
  async saveSamplerWeights(name: string): Promise<string> {
    const result = await this.train(
      this.acts.saveCheckpoint,
      { run: this.input.run, name, kind: 'sampler', ttlSeconds: this.input.config.ttl_seconds, row: {}, record: false },
      `sampler weights ${name}`,
    );
    return result.samplerPath!;
  }

  private async saveFinal(spec: LoopSpec): Promise<void> {
    this.setStatus('stopping');
    // Histories recorded before the closing row replay without it.
    const closing = spec.closingMetrics?.();
    if (closing && patched(CLOSING_ROW_PATCH)) await this.logMetrics(this.state.step, closing);
    const row = { ...spec.finalRow(), ...(this.state.stopRequested ? { stopped_early: true } : {}) };
    await this.checkpoints.saveFinal(this.state.step - 1, row);
  }

  private async waitWhilePaused(): Promise<void> {
    if (!this.state.paused) return;
    this.setStatus('paused');
    await condition(() => !this.state.paused || this.state.stopRequested);
    this.setStatus('running');
  }

  private async maybeContinueAsNew(spec: LoopSpec): Promise<void> {
    const enough = this.stepsThisWorkflowRun >= this.input.config.durability.steps_per_workflow_run;
    if (!enough && !workflowInfo().continueAsNewSuggested) return;
    // A periodic save still running completes in this run (a lost model: recovered, then on).
    if (!(await this.withRecovery(spec, () => this.checkpoints.settle()))) return;
    await spec.beforeContinueAsNew?.();
    await condition(allHandlersFinished);
    await continueAsNew<(input: RunInput<C, P>) => Promise<RunResult>>({ ...this.input, state: this.state });
  }

  private installHandlers(): void {
    setHandler(stopSignal, (reason) => {
      this.state.stopRequested = true;
      this.state.stopReason = reason;
    });
    setHandler(pauseSignal, () => {
      this.state.paused = true;
    });
    setHandler(resumeSignal, () => {
      this.state.paused = false;
    });
    setHandler(
      setUpdate,
      (patch) => {
        this.state.hot = { ...this.state.hot, ...patch };
        return { settings: this.state.hot, fromStep: Math.max(this.state.step, this.lastFixedStep + 1) };
      },
      { validator: validateHotSettings },
    );
    setHandler(setSignal, (patch) => {
      const problem = hotSettingsProblem(patch);
      if (problem) return log.warn(`recorded set ignored: ${problem}`, { patch });
      this.state.hot = { ...this.state.hot, ...patch };
    });
    setHandler(progressQuery, (): Progress => ({
      kind: this.kind,
      model: this.input.config.model_name,
      status: this.state.status,
      step: this.state.step,
      totalSteps: this.totalSteps,
      paused: this.state.paused,
      stopRequested: this.state.stopRequested,
      lastMetrics: this.state.lastMetrics,
      lastCheckpoint: this.state.lastCheckpoint,
      hot: this.state.hot,
      recoveries: this.state.recoveries,
      logPath: this.input.run.logPath,
    }));
  }

  private setStatus(status: RunStatus): void {
    this.state.status = status;
    this.publish();
  }

  /** UI summary line (free: read through the metadata query) and throttled search attributes. */
  private publish(lossKey?: string): void {
    const loss = lossKey ? this.state.lastMetrics[lossKey] : undefined;
    const parts = [`${this.state.status}`, `step ${this.state.step}/${this.totalSteps}`];
    if (loss !== undefined) parts.push(`${lossKey} ${loss.toFixed(4)}`);
    if (this.state.recoveries) parts.push(`${this.state.recoveries} recoveries`);
    if (this.state.failovers?.length) parts.push(`training on ${this.state.failovers.at(-1)!.to}`);
    setCurrentDetails(parts.join(' · '));
    const stepDue = this.state.step - this.lastUpsertedStep >= SEARCH_ATTRIBUTE_EVERY_STEPS || this.state.step >= this.totalSteps;
    if (this.state.status !== this.lastUpsertedStatus || stepDue) {
      upsertSearchAttributes([
        { key: StatusKey, value: this.state.status },
        { key: StepKey, value: this.state.step },
      ]);
      this.lastUpsertedStatus = this.state.status;
      this.lastUpsertedStep = this.state.step;
    }
  }
}
