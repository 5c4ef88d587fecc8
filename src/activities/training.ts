// Activities every paradigm uses: claim the run directory, create or restore the training model,
// save checkpoints, write metrics rows.
import { ApplicationFailure } from '@temporalio/activity';
import { BackendError, type TrainingBackend, type TrainingSession } from '../backends/types.js';
import { RunDirInUseError, RunStore, type RunRef } from '../cookbook/run-store.js';
import { runLogger } from '../cookbook/logging.js';
import { checkpointMetadata, metadataConflicts, type MetadataConfig } from '../cookbook/checkpoint-metadata.js';
import type { ContinueFrom } from '../cookbook/config/common.js';
import { rowExpiry } from '../cookbook/checkpoint-expiry.js';
import { parseTinkerPath } from '../backends/tinker-backend.js';
import { scopeSpan } from '../cookbook/timing.js';
import { callBackend, heartbeating, toFailure, type ActivityDeps } from './context.js';
import { ensureCheckpointOn, mirrorCheckpoint } from './failover.js';
import { readRunConfig } from './run-config.js';
import { honoursSeqId, seqIdGuaranteesOf } from '../backends/seq-guarantees.js';
import { modelSession } from './unsequenced.js';
import { asEvalsPart, rollBackTiming, stepTiming } from './timing.js';
import { ErrorTypes, type CreateModelInput, type FailoverRecord, type LogMetricsInput, type ModelRef, type RestoreModelInput, type SaveCheckpointInput, type SaveCheckpointResult } from './types.js';

/** The config fields model creation needs; every paradigm's config has them. */
export interface ModelConfig {
  model_name: string;
  lora_rank: number;
  seed: number;
  base_url: string | null;
  /** The run's Tinker wire (absent from configs recorded before it existed). */
  wire?: 'json' | 'proto' | null;
  load_checkpoint_path: string | null;
  /** Absent from configs recorded before they existed (false / null / true). */
  load_checkpoint_with_optimizer?: boolean;
  continue_from?: ContinueFrom | null;
  check_checkpoint_metadata?: boolean;
  renderer_name?: string | null;
  tokenizer_path?: string | null;
  dataset?: { renderer_name?: string | null } | null;
}

/**
 * What a starting checkpoint was trained with: its weights' base model and LoRA rank from the
 * backend, the renderer from its training run's metadata (where the backend keeps it, as the
 * reference reads it), and for a continued run the row its parent recorded.
 */
async function startingCheckpointMetadata(backend: TrainingBackend, cfg: ModelConfig): Promise<Record<string, unknown>> {
  const path = cfg.load_checkpoint_path!;
  const info = await callBackend('weights_info of load_checkpoint_path', 'bad-path', () => backend.weightsInfo(path));
  const recorded: Record<string, unknown> = { base_model: info.base_model, lora_rank: info.lora_rank ?? undefined };
  const withRuns = backend as TrainingBackend & { getTrainingRun?(id: string): Promise<{ user_metadata?: Record<string, string> | null }> };
  if (withRuns.getTrainingRun) {
    const run = await withRuns.getTrainingRun(parseTinkerPath(path).trainingRunId).catch(() => undefined);
    if (run?.user_metadata?.renderer_name) recorded.renderer_name = run.user_metadata.renderer_name;
  }
  if (cfg.continue_from) {
    const row = new RunStore(cfg.continue_from.log_path).readCheckpoints().find((r) => r.name === cfg.continue_from!.name);
    if (row) Object.assign(recorded, Object.fromEntries(Object.entries(row).filter(([, v]) => v !== undefined && v !== null)));
  }
  return recorded;
}

/** Fails with a config error naming each key that disagrees with the starting checkpoint. */
export function checkStartingCheckpoint(recorded: Record<string, unknown>, cfg: ModelConfig): void {
  if (cfg.check_checkpoint_metadata === false) return;
  const conflicts = metadataConflicts(recorded, cfg as MetadataConfig, `load_checkpoint_path ${cfg.load_checkpoint_path}`);
  if (conflicts.length) throw ApplicationFailure.nonRetryable(conflicts.join('\n'), ErrorTypes.config);
}

/** Python float keys of configs: every number that is not a count, size, seed or cadence. */
const FLOAT_CONFIG_KEYS = new Set([
  'learning_rate', 'adam_beta1', 'adam_beta2', 'adam_eps', 'heartbeat_timeout_s', 'step_timeout_s',
  'kl_penalty_coef', 'kl_discount_factor', 'temperature', 'dpo_beta', 'loss_fn_config',
]);

/**
 * The engine's answer for a checkpoint whose files on its disk no longer match the checksums
 * recorded when it was saved: `checkpoint <path> is damaged: <file>: <reason>` (a 422 to
 * weights_info / load_weights, or the error of a load that found it).
 */
export function isDamagedCheckpoint(err: unknown): boolean {
  return err instanceof BackendError && /\bcheckpoint \S+ is damaged: /.test(`${err.message} ${typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail ?? '')}`);
}

/**
 * The engine's answer for a checkpoint whose TTL ran out: `checkpoint <path> expired … and was
 * deleted` (a 404 that, unlike an unknown path, says the checkpoint existed).
 */
export function isExpiredCheckpoint(err: unknown): boolean {
  return err instanceof BackendError && err.kind === 'not_found' && /\bcheckpoint \S+ expired\b/.test(`${err.message} ${typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail ?? '')}`);
}

export { readRunConfig };

export function trainingActivities(deps: ActivityDeps) {
  const backendOf = (run: RunRef): { backend: TrainingBackend; cfg: ModelConfig } => {
    const cfg = readRunConfig<ModelConfig>(run);
    return { backend: deps.backendFor(cfg.base_url, cfg.wire), cfg };
  };

  async function saveCheckpoint({ run, model, name, kind, ttlSeconds, row, record = true }: SaveCheckpointInput): Promise<SaveCheckpointResult> {
    const { backend, cfg } = backendOf(run);
    const session = modelSession(backend, model);
    let seqId = model.nextSeqId;
    const opts = () => ({ seqId, ttlSeconds, overwrite: true });
    const expiry = rowExpiry(ttlSeconds); // before the save is sent: never later than the backend's
    const state = kind === 'sampler' ? undefined : await callBackend('save_state', 'model-lost', () => session.saveState(name, opts()));
    if (state) seqId += state.seqIds;
    const sampler = kind === 'state' ? undefined : await callBackend('save_weights_for_sampler', 'model-lost', () => session.saveWeightsForSampler(name, opts()));
    if (sampler) seqId += sampler.seqIds;
    const [statePath, samplerPath] = await callBackend('save checkpoint', 'model-lost', () =>
      heartbeating(Promise.all([state?.result().then((r) => r.path), sampler?.result().then((r) => r.path)])),
    );
    // With `failover`, the state goes to the run store too: restorable when this backend is gone.
    if (statePath && (cfg as { failover?: unknown }).failover) await callBackend('mirror checkpoint', 'bad-path', () => heartbeating(mirrorCheckpoint(backend, run, statePath)));
    // Recorded only after both saves completed, so a row always names restorable weights.
    // With what it was trained with, checked when a run loads it (checkpoint-metadata.ts).
    if (record) new RunStore(run.logPath).writeCheckpoint({ name, ...row, ...checkpointMetadata(cfg as MetadataConfig), state_path: statePath, sampler_path: samplerPath, ...expiry });
    return { seqIdsUsed: seqId - model.nextSeqId, statePath, samplerPath };
  }

  /**
   * A new model's ref, with what its server guarantees about seq_id (learned once per server, maybe
   * by a probe on this model from `nextSeqId`), said in the run's log.
   */
  async function modelRef(run: RunRef, backend: TrainingBackend, session: TrainingSession, nextSeqId: number): Promise<ModelRef> {
    const { guarantees, seqIdsUsed } = await callBackend('seq_id guarantees', 'model-lost', () => heartbeating(seqIdGuaranteesOf(backend, session, nextSeqId)));
    const honoured = honoursSeqId(guarantees);
    runLogger(new RunStore(run.logPath).logFile, { run: run.workflowId })[honoured ? 'info' : 'warn'](
      { ...guarantees, modelId: session.modelId },
      honoured
        ? 'training server orders and deduplicates requests by seq_id'
        : 'training server ignores seq_id: one training request at a time, a retried step restores the last checkpoint',
    );
    return { modelId: session.modelId, nextSeqId: nextSeqId + seqIdsUsed, ...(honoured ? {} : { seqIdIgnored: true }) };
  }

  return {
    async initRun({ run, config }: { run: RunRef; config: unknown }): Promise<void> {
      try {
        new RunStore(run.logPath).init({ workflowId: run.workflowId, kind: run.kind, config }, FLOAT_CONFIG_KEYS);
      } catch (err) {
        if (err instanceof RunDirInUseError) throw ApplicationFailure.nonRetryable(err.message, ErrorTypes.config);
        throw err;
      }
      runLogger(new RunStore(run.logPath).logFile, { run: run.workflowId }).info({ kind: run.kind }, 'run initialised');
    },

    async createModel({ run }: CreateModelInput): Promise<ModelRef> {
      const { backend, cfg } = backendOf(run);
      const meta = checkpointMetadata(cfg as MetadataConfig);
      // The renderer as the reference records it: in the training run's metadata.
      const userMetadata = { workflow_id: run.workflowId, kind: run.kind, ...(meta.renderer_name ? { renderer_name: meta.renderer_name } : {}) };
      if (cfg.load_checkpoint_path) {
        checkStartingCheckpoint(await startingCheckpointMetadata(backend, cfg), cfg);
        // As the reference: a starting checkpoint brings its weights, not its optimizer state,
        // unless asked for (or continuing a run: its resume path).
        const withOptimizer = cfg.load_checkpoint_with_optimizer === true || !!cfg.continue_from;
        const { session, nextSeqId } = await callBackend('load_checkpoint_path', 'bad-path', () =>
          heartbeating(backend.createTrainingSessionFromState(cfg.load_checkpoint_path!, { withOptimizer, userMetadata })),
        );
        return modelRef(run, backend, session, nextSeqId);
      }
      const session = await callBackend('create_model', 'bad-path', () =>
        heartbeating(backend.createTrainingSession({ baseModel: cfg.model_name, lora: { rank: cfg.lora_rank, seed: cfg.seed }, userMetadata })),
      );
      runLogger(new RunStore(run.logPath).logFile, { run: run.workflowId }).info({ modelId: session.modelId }, 'model created');
      return modelRef(run, backend, session, 1);
    },

    async restoreModel({ run, statePath, withOptimizer }: RestoreModelInput): Promise<ModelRef> {
      const { backend, cfg } = backendOf(run);
      const renderer = checkpointMetadata(cfg as MetadataConfig).renderer_name;
      const userMetadata = { workflow_id: run.workflowId, kind: run.kind, ...(renderer ? { renderer_name: renderer } : {}) };
      // After a failover the new backend is given the checkpoint from the run store's mirror.
      if ((cfg as { failover?: unknown }).failover) await callBackend('import checkpoint', 'bad-path', () => heartbeating(ensureCheckpointOn(backend, run, statePath)));
      const { session, nextSeqId } = await callBackend('restore from checkpoint', 'bad-path', () =>
        heartbeating(backend.createTrainingSessionFromState(statePath, { withOptimizer, userMetadata })).catch((err: unknown) => {
          // Its files no longer match what was saved: this checkpoint can never be restored (an older one may).
          if (isDamagedCheckpoint(err)) throw ApplicationFailure.nonRetryable(`restore from checkpoint ${statePath}: ${(err as Error).message}`, ErrorTypes.checkpointDamaged, { statePath });
          // Its TTL ran out and the engine deleted it: gone for good (an older one may still be there).
          if (isExpiredCheckpoint(err)) throw ApplicationFailure.nonRetryable(`restore from checkpoint ${statePath}: ${(err as Error).message}`, ErrorTypes.checkpointExpired, { statePath });
          throw err;
        }),
      );
      runLogger(new RunStore(run.logPath).logFile, { run: run.workflowId }).warn({ statePath, modelId: session.modelId }, 'model restored from checkpoint');
      return modelRef(run, backend, session, nextSeqId);
    },

    saveCheckpoint(input: SaveCheckpointInput): Promise<SaveCheckpointResult> {
      // Timed as the reference's CheckpointManager save; sampler weights alone as the SDK call they
      // are, and the snapshot SL's and DPO's evaluators sample from as part of the step's evals.
      const save = () => scopeSpan(input.record === false ? 'save_weights_for_sampler' : 'save_checkpoint', () => saveCheckpoint(input));
      return input.name.startsWith('eval_') ? asEvalsPart(input.run, save) : save();
    },

    async deleteCheckpoint({ run, statePath }: { run: RunRef; statePath: string }): Promise<void> {
      const { backend } = backendOf(run);
      const { trainingRunId, kind, name } = parseTinkerPath(statePath);
      try {
        await heartbeating(backend.deleteCheckpoint(trainingRunId, `${kind}/${name}`));
      } catch (err) {
        // Already deleted by an earlier attempt of this activity.
        if (!(err instanceof BackendError && err.kind === 'not_found')) throw toFailure(err, `delete checkpoint ${statePath}`, 'bad-path');
      }
      runLogger(new RunStore(run.logPath).logFile, { run: run.workflowId }).info({ statePath }, 'rolling checkpoint deleted');
    },

    /** A row no step activity writes (a step whose rollouts all failed, RL's closing totals), with its step's timing. */
    async logMetrics({ run, step, metrics }: LogMetricsInput): Promise<void> {
      const timing = stepTiming(run, step);
      const store = new RunStore(run.logPath);
      store.writeMetrics({ step, ...metrics, ...timing.metrics });
      timing.write(store);
    },

    async rollBackMetrics({ run, fromStep }: { run: RunRef; fromStep: number }): Promise<void> {
      new RunStore(run.logPath).truncateMetrics(fromStep);
      rollBackTiming(run, fromStep);
    },

    async recordFailovers({ run, failovers }: { run: RunRef; failovers: FailoverRecord[] }): Promise<void> {
      new RunStore(run.logPath).writeFailovers(failovers);
      runLogger(new RunStore(run.logPath).logFile, { run: run.workflowId }).warn(failovers.at(-1) ?? {}, 'training moved to another backend');
    },
  };
}
