// When a run checkpoints and what it keeps, as the reference's CheckpointManager: periodic
// checkpoints (every `save_every` steps, `save_every_tokens` tokens or `save_every_seconds` of
// workflow time since the last), optionally saved while the next step runs (`async_periodic_saves`);
// rolling resume-only ones, the superseded one deleted; the final one; and the committed
// checkpoints recovery falls back through when the newest is damaged or expired.
import { ApplicationFailure, log } from '@temporalio/workflow';
import type { ModelRef, SaveKind } from '../../activities/types.js';
import { ErrorTypes } from '../../activities/types.js';
import { failedWith, isBackendLost, isModelLost } from './failures.js';
import type { CheckpointRef } from './messages.js';
import type { activitiesFor, LoopSpec, RunConfig, RunInput, RunState } from './training-run.js';

/** What the policy needs of the run it checkpoints. */
/**
 * The start time of the current workflow task (ms). Inside the workflow sandbox, Date.now() reads that
 * time from history: a replay sees the times the first run saw. It is never the host's clock.
 */
const workflowTime = (): number => Date.now();

export interface CheckpointHost {
  readonly state: RunState;
  readonly input: RunInput<RunConfig, unknown>;
  readonly acts: ReturnType<typeof activitiesFor>;
  readonly model: ModelRef;
}

/** Checkpoints kept to fall back to when the last one turns out damaged on the backend. */
const OLDER_CHECKPOINTS_KEPT = 3;
/** Sequence ids a save of state and sampler weights consumes (one per request): reserved for a save that runs beside the next step. */
const SEQ_IDS_OF_A_FULL_SAVE = 2;

/** The model or its backend is gone: what recovery handles (any other failure of a background save is logged, as the reference). */
const needsRecovery = (err: unknown) => isModelLost(err) || isBackendLost(err);

/** A periodic save running beside the next steps: committed once it completes. */
interface PendingSave {
  name: string;
  /** Resolves with its failure, or undefined (never rejects: a rejection nothing awaits yet would fail the workflow task). */
  outcome: Promise<unknown>;
}

export class CheckpointPolicy {
  private pending?: PendingSave;

  constructor(
    private readonly run: CheckpointHost,
    private readonly resumeState: () => Record<string, unknown> | undefined,
  ) {}

  private get state(): RunState {
    return this.run.state;
  }

  private get config(): RunConfig {
    return this.run.input.config;
  }

  /** The reference's `_last_saved_tokens`: elapsed tokens at the last periodic save (a continued run: where its parent stopped). */
  private get savedTokens(): number {
    return this.state.savedTokens ?? this.config.continue_from?.elapsed_tokens ?? 0;
  }

  /** Workflow time (deterministic) of the last periodic save, or of the run's start. */
  private get savedAt(): number {
    return this.state.savedAt ?? workflowTime();
  }

  /**
   * The periodic checkpoint after `step`, if one is due: on its step cadence (the paradigm's), or,
   * where the paradigm may checkpoint after `step`, on tokens or seconds since the last.
   * `tokensAfter` undefined (the step's size not known yet) counts as due when tokens are a trigger.
   */
  periodicAfter(step: number, spec: LoopSpec, tokensAfter: number | undefined): { name: string; row: Record<string, unknown> } | undefined {
    const every = this.state.hot.save_every;
    const onStep = every > 0 ? spec.periodicCheckpoint(step, every) : undefined;
    if (onStep || !this.tokensOrSecondsDue(tokensAfter)) return onStep;
    // Cadence 1: every step the paradigm may name a checkpoint after (SL: any but step 0, as the reference).
    return spec.periodicCheckpoint(step, 1);
  }

  private tokensOrSecondsDue(tokensAfter: number | undefined): boolean {
    const tokens = this.config.save_every_tokens ?? 0;
    if (tokens > 0 && (tokensAfter === undefined || tokensAfter - this.savedTokens >= tokens)) return true;
    const seconds = this.config.save_every_seconds ?? 0;
    return seconds > 0 && workflowTime() - this.savedAt >= seconds * 1000;
  }

  /**
   * A rolling checkpoint after `step` (the reference's cadence on steps completed), unless a
   * periodic one falls there on the step cadence: resume-only state, its row marked `rolling`.
   */
  rollingDue(step: number, spec: LoopSpec): boolean {
    const every = this.config.rolling_save_every ?? 0;
    const periodic = this.state.hot.save_every;
    return every > 0 && (step + 1) % every === 0 && !(periodic > 0 && spec.periodicCheckpoint(step, periodic));
  }

  /** Whatever must come between `step` and the next: a checkpoint holds exactly the steps its row names. */
  dueAfter(step: number, spec: LoopSpec, tokensAfter: number | undefined): boolean {
    return this.periodicAfter(step, spec, tokensAfter) !== undefined || this.rollingDue(step, spec);
  }

  /** The checkpoints due after `step` (completed, nothing queued behind it): periodic, then rolling. */
  async saveDue(step: number, spec: LoopSpec): Promise<void> {
    const periodic = this.periodicAfter(step, spec, this.state.elapsedTokens);
    if (periodic) {
      await this.settle();
      // Before the save: its checkpoint records the count, so a restore to it goes on counting from it.
      if (this.config.save_every_tokens) this.state.savedTokens = this.state.elapsedTokens;
      // Beside the next steps only where the server orders the model's requests by seq_id.
      if (this.config.async_periodic_saves && !this.run.model.seqIdIgnored) this.launch(periodic.name, step, periodic.row);
      else await this.save(periodic.name, step, 'both', this.config.ttl_seconds, periodic.row);
      // As the reference: the clock restarts once a save completed (or was launched).
      if (this.config.save_every_seconds) this.state.savedAt = workflowTime();
    }
    if (this.rollingDue(step, spec)) await this.saveRolling(step, spec);
  }

  /** The seconds trigger counts from the run's start (a continued-as-new run keeps its count). */
  start(): void {
    if (this.config.save_every_seconds) this.state.savedAt ??= workflowTime();
  }

  private async saveRolling(step: number, spec: LoopSpec): Promise<void> {
    await this.settle();
    const row = { ...spec.loopState?.(step), rolling: true };
    await this.save(`rolling_${String(step + 1).padStart(6, '0')}`, step, 'state', this.config.rolling_ttl_seconds ?? null, row);
    const previous = this.state.rollingStatePath;
    this.state.rollingStatePath = this.state.lastCheckpoint?.statePath;
    if (previous) await this.deleteRolling(previous);
  }

  /** The final checkpoint (no TTL), after any save still running, then the last rolling one deleted. */
  async saveFinal(step: number, row: Record<string, unknown>): Promise<void> {
    await this.settle();
    await this.save('final', step, 'both', null, row);
    if (this.state.rollingStatePath) await this.deleteRolling(this.state.rollingStatePath);
  }

  /** Deleted on the backend, and never again a recovery target. */
  private async deleteRolling(statePath: string): Promise<void> {
    await this.run.acts.deleteCheckpoint({ run: this.run.input.run, statePath });
    this.state.olderCheckpoints = this.state.olderCheckpoints?.filter((c) => c.statePath !== statePath);
    if (this.state.rollingStatePath === statePath) this.state.rollingStatePath = undefined;
  }

  private async save(name: string, step: number, kind: SaveKind, ttlSeconds: number | null, row: Record<string, unknown>): Promise<void> {
    const model = this.run.model;
    const result = await this.run.acts.saveCheckpoint.executeWithOptions({ summary: `save ${name}` }, [this.saveInput(model, name, step, kind, ttlSeconds, row)]);
    this.state.model = { ...model, nextSeqId: model.nextSeqId + result.seqIdsUsed };
    if (result.statePath) this.commit(this.refOf(name, step), result);
  }

  /**
   * A periodic save that runs while the next steps do (the reference's `async_periodic_saves`):
   * its sequence ids are taken now, so the backend saves exactly the weights after `step` however
   * the next step's requests overtake it. Committed, and its row written, once it completes.
   */
  private launch(name: string, step: number, row: Record<string, unknown>): void {
    const model = this.run.model;
    this.state.model = { ...model, nextSeqId: model.nextSeqId + SEQ_IDS_OF_A_FULL_SAVE };
    const ref = this.refOf(name, step);
    const outcome = this.run.acts.saveCheckpoint
      .executeWithOptions({ summary: `save ${name} (beside the next steps)` }, [this.saveInput(model, name, step, 'both', this.config.ttl_seconds, row)])
      .then(
        (result) => {
          if (result.seqIdsUsed !== SEQ_IDS_OF_A_FULL_SAVE) return ApplicationFailure.nonRetryable(`save ${name} used ${result.seqIdsUsed} sequence ids, ${SEQ_IDS_OF_A_FULL_SAVE} were reserved`);
          if (result.statePath) this.commit(ref, result);
          return undefined;
        },
        (err: unknown) => err ?? new Error(`save ${name} failed`),
      );
    this.pending = { name, outcome };
  }

  /**
   * Waits for a periodic save still running. A lost model or backend is thrown for recovery
   * (`settle`) or returned (`settled`); any other failure leaves the last checkpoint as it was,
   * logged, as the reference's background save.
   */
  async settle(): Promise<void> {
    const err = await this.settled();
    // An ApplicationFailure of the workflow's own (the reserved sequence ids): the run cannot go on.
    if (err !== undefined && (needsRecovery(err) || err instanceof ApplicationFailure)) throw err;
  }

  async settled(): Promise<unknown> {
    const pending = this.pending;
    if (!pending) return undefined;
    const err = await pending.outcome;
    if (this.pending === pending) this.pending = undefined;
    if (err !== undefined && !needsRecovery(err)) log.warn(`background periodic checkpoint ${pending.name} failed`, { error: String(err) });
    return err;
  }

  private saveInput(model: ModelRef, name: string, step: number, kind: SaveKind, ttlSeconds: number | null, row: Record<string, unknown>) {
    const resumeState = this.resumeState();
    // next_step (and resume_state): where a run continued from this checkpoint starts (`cookbook continue`).
    return { run: this.run.input.run, model, name, kind, ttlSeconds, row: { ...row, next_step: step + 1, ...(resumeState ? { resume_state: resumeState } : {}) } };
  }

  /** The checkpoint as of now, but its paths: what recovery restores to once it is committed. */
  private refOf(name: string, step: number): Omit<CheckpointRef, 'statePath'> {
    return {
      name,
      step,
      elapsedTokens: this.state.elapsedTokens,
      ...(this.config.save_every_tokens ? { savedTokens: this.savedTokens } : {}),
      // A copy: paradigms may keep mutating their live state (e.g. rollouts landing in a queue).
      custom: this.state.custom === undefined ? undefined : JSON.parse(JSON.stringify(this.state.custom)),
    };
  }

  /** Committed only once its saves completed: this is what recovery restores. */
  private commit(ref: Omit<CheckpointRef, 'statePath'>, result: { statePath?: string; samplerPath?: string }): void {
    if (this.state.lastCheckpoint) this.state.olderCheckpoints = [...(this.state.olderCheckpoints ?? []), this.state.lastCheckpoint].slice(-OLDER_CHECKPOINTS_KEPT);
    const { name, step, elapsedTokens, custom, savedTokens } = ref;
    this.state.lastCheckpoint = { name, step, statePath: result.statePath!, samplerPath: result.samplerPath, elapsedTokens, ...(savedTokens !== undefined ? { savedTokens } : {}), custom };
  }

  /**
   * Restores the newest committed checkpoint whose files are intact and whose TTL has not run out
   * (the backend refuses a damaged one as CheckpointDamaged, naming the file, and an expired one as
   * CheckpointExpired) into a new model; undefined if none is left. A save still running is
   * waited for first: if it completed, it is the newest.
   */
  async restoreLastGood(): Promise<CheckpointRef | undefined> {
    await this.settled();
    for (let ckpt = this.state.lastCheckpoint; ckpt; ckpt = this.state.lastCheckpoint) {
      try {
        this.state.model = await this.run.acts.restoreModel({ run: this.run.input.run, statePath: ckpt.statePath, withOptimizer: true });
        if (this.config.save_every_tokens) this.state.savedTokens = ckpt.savedTokens ?? ckpt.elapsedTokens;
        return ckpt;
      } catch (err) {
        if (!failedWith(err, ErrorTypes.checkpointDamaged) && !failedWith(err, ErrorTypes.checkpointExpired)) throw err;
        this.state.lastCheckpoint = this.state.olderCheckpoints?.pop();
      }
    }
    // From scratch: the run's start.
    if (this.config.save_every_tokens) this.state.savedTokens = undefined;
    return undefined;
  }
}
