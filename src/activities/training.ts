// Activities every paradigm uses: claim the run directory, create or restore the training model,
// save checkpoints, write metrics rows.
import { ApplicationFailure } from '@temporalio/activity';
import { BackendError, type TrainingBackend } from '../backends/types.js';
import { RunDirInUseError, RunStore, type RunRef } from '../cookbook/run-store.js';
import { runLogger } from '../cookbook/logging.js';
import { callBackend, heartbeating, type ActivityDeps } from './context.js';
import { ErrorTypes, type CreateModelInput, type LogMetricsInput, type ModelRef, type RestoreModelInput, type SaveCheckpointInput, type SaveCheckpointResult } from './types.js';

/** The config fields model creation needs; every paradigm's config has them. */
export interface ModelConfig {
  model_name: string;
  lora_rank: number;
  seed: number;
  base_url: string | null;
  load_checkpoint_path: string | null;
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

export function readRunConfig<C>(run: RunRef): C {
  return new RunStore(run.logPath).read<C>().config;
}

export function trainingActivities(deps: ActivityDeps) {
  const backendOf = (run: RunRef): { backend: TrainingBackend; cfg: ModelConfig } => {
    const cfg = readRunConfig<ModelConfig>(run);
    return { backend: deps.backendFor(cfg.base_url), cfg };
  };

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
      const userMetadata = { workflow_id: run.workflowId, kind: run.kind };
      if (cfg.load_checkpoint_path) {
        // As the reference: a starting checkpoint brings its weights, not its optimizer state.
        const { session, nextSeqId } = await callBackend('load_checkpoint_path', 'bad-path', () =>
          heartbeating(backend.createTrainingSessionFromState(cfg.load_checkpoint_path!, { withOptimizer: false, userMetadata })),
        );
        return { modelId: session.modelId, nextSeqId };
      }
      const session = await callBackend('create_model', 'bad-path', () =>
        heartbeating(backend.createTrainingSession({ baseModel: cfg.model_name, lora: { rank: cfg.lora_rank, seed: cfg.seed }, userMetadata })),
      );
      runLogger(new RunStore(run.logPath).logFile, { run: run.workflowId }).info({ modelId: session.modelId }, 'model created');
      return { modelId: session.modelId, nextSeqId: 1 };
    },

    async restoreModel({ run, statePath, withOptimizer }: RestoreModelInput): Promise<ModelRef> {
      const { backend } = backendOf(run);
      const { session, nextSeqId } = await callBackend('restore from checkpoint', 'bad-path', () =>
        heartbeating(backend.createTrainingSessionFromState(statePath, { withOptimizer, userMetadata: { workflow_id: run.workflowId, kind: run.kind } })).catch((err: unknown) => {
          // Its files no longer match what was saved: this checkpoint can never be restored (an older one may).
          if (isDamagedCheckpoint(err)) throw ApplicationFailure.nonRetryable(`restore from checkpoint ${statePath}: ${(err as Error).message}`, ErrorTypes.checkpointDamaged, { statePath });
          throw err;
        }),
      );
      runLogger(new RunStore(run.logPath).logFile, { run: run.workflowId }).warn({ statePath, modelId: session.modelId }, 'model restored from checkpoint');
      return { modelId: session.modelId, nextSeqId };
    },

    async saveCheckpoint({ run, model, name, kind, ttlSeconds, row, record = true }: SaveCheckpointInput): Promise<SaveCheckpointResult> {
      const { backend } = backendOf(run);
      const session = backend.openTrainingSession(model.modelId);
      let seqId = model.nextSeqId;
      const opts = () => ({ seqId, ttlSeconds, overwrite: true });
      const state = kind === 'sampler' ? undefined : await callBackend('save_state', 'model-lost', () => session.saveState(name, opts()));
      if (state) seqId += state.seqIds;
      const sampler = kind === 'state' ? undefined : await callBackend('save_weights_for_sampler', 'model-lost', () => session.saveWeightsForSampler(name, opts()));
      if (sampler) seqId += sampler.seqIds;
      const [statePath, samplerPath] = await callBackend('save checkpoint', 'model-lost', () =>
        heartbeating(Promise.all([state?.result().then((r) => r.path), sampler?.result().then((r) => r.path)])),
      );
      // Recorded only after both saves completed, so a row always names restorable weights.
      if (record) new RunStore(run.logPath).writeCheckpoint({ name, ...row, state_path: statePath, sampler_path: samplerPath });
      return { seqIdsUsed: seqId - model.nextSeqId, statePath, samplerPath };
    },

    async logMetrics({ run, step, metrics }: LogMetricsInput): Promise<void> {
      new RunStore(run.logPath).writeMetrics({ step, ...metrics });
    },

    async rollBackMetrics({ run, fromStep }: { run: RunRef; fromStep: number }): Promise<void> {
      new RunStore(run.logPath).truncateMetrics(fromStep);
    },
  };
}
