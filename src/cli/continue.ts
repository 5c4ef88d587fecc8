// `cookbook continue <run> [key=value …]`: a new run that picks up a finished, stopped or failed
// run from its last state checkpoint, optimizer included (the reference's resume path), with the
// parent's config plus overrides such as num_epochs, max_steps or learning_rate. It starts at the
// step the checkpoint contains, so step numbers, the LR schedule (recomputed over the new total,
// as the reference does on resume) and the data order go on as one longer run's would. Its own
// run directory's config.json points at the parent (`continue_from`).
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import { metadataConflicts, type MetadataConfig } from '../cookbook/checkpoint-metadata.js';
import { ConfigError, parseWithOverrides } from '../cookbook/config/overrides.js';
import { RunStore, type CheckpointRow, type RunKind } from '../cookbook/run-store.js';
import { runIdFor, TRAINABLE_KINDS, type ResolvedRun } from './train.js';
import { checkLogPathFree, runLogPath } from '../cookbook/stores/run-location.js';
import { isObjectStoreUri } from '../cookbook/stores/storage.js';
import { mountRun } from '../cookbook/stores/mirror.js';
import { rowExpired } from '../cookbook/checkpoint-expiry.js';
import { tokenLoopState, tokenTotalsFromLoopState } from '../cookbook/token-usage.js';

/**
 * Kinds whose workflows start at `continue_from.next_step` from the checkpoint's weights and
 * optimizer, with the paradigm state the checkpoint row recorded (`resume_state`): DPO's reference
 * weights, RL's rollout error counts. Distillation's teacher-sampling stage has no checkpoint.
 */
export const CONTINUABLE_KINDS: readonly RunKind[] = ['sl', 'rl', 'dpo', 'distill', 'distill_off_policy', 'sdft'];

/** Keys `cookbook continue` sets itself from the parent's checkpoint. */
const SET_BY_CONTINUE = ['continue_from', 'load_checkpoint_path', 'load_checkpoint_with_optimizer'];

export const CONTINUE_USAGE = `  continue <id or log dir> [k=v …]     a new run from a finished or stopped run's last state checkpoint,
        [--wait] [--id <workflow id>]       optimizer included; k=v overrides (num_epochs, max_steps, learning_rate, …)`;

/**
 * The reference's get_last_checkpoint: the last row with a state path, skipping rows whose TTL ran
 * out (a rolling checkpoint of a run stopped hours ago is deleted on the backend).
 */
export function lastStateCheckpoint(logPath: string, nowMs = Date.now()): CheckpointRow | undefined {
  return new RunStore(logPath).readCheckpoints().filter((r) => typeof r.state_path === 'string' && !rowExpired(r, nowMs)).at(-1);
}

/** A log dir given directly, or the log dir of a workflow id. */
export async function parentLogDir(idOrDir: string, logDirOf: (id: string) => Promise<string>): Promise<string> {
  if (isObjectStoreUri(idOrDir)) return mounted(idOrDir.replace(/\/+$/, ''));
  const dir = resolve(idOrDir);
  if (existsSync(join(dir, '.cookbook', 'run.json'))) return dir;
  return mounted(await logDirOf(idOrDir));
}

/** A run in an object store, brought into this host's mirror (RunStore reads it there); a folder as it is. */
async function mounted(logPath: string): Promise<string> {
  await mountRun(logPath);
  return logPath;
}

/**
 * The continued run: the parent's resolved config with the overrides, starting from the parent's
 * last state checkpoint. Errors name the config key or file at fault; nothing is created.
 */
export function resolveContinuation(parentLogPath: string, overrides: string[], opts: { runsDir?: string; workflowId?: string } = {}): ResolvedRun {
  const parent = new RunStore(parentLogPath).read<Record<string, unknown>>();
  const kind = parent.kind;
  if (!CONTINUABLE_KINDS.includes(kind)) throw new ConfigError(`continue: ${kind} runs cannot be continued yet (supported: ${CONTINUABLE_KINDS.join(', ')})`);
  if (kind === 'distill' && parent.config.mode === 'off_policy_sample') {
    throw new ConfigError(`mode: ${parentLogPath} is a teacher-sampling run (mode off_policy_sample), which has no checkpoint; start it again (it resumes from the shards on disk) or continue its SFT stage`);
  }
  for (const o of overrides) {
    const key = o.slice(0, Math.max(0, o.indexOf('='))).split('.')[0];
    if (SET_BY_CONTINUE.includes(key)) throw new ConfigError(`${key}: set by \`cookbook continue\` from the parent's checkpoint; remove the override`);
  }
  const row = lastStateCheckpoint(parentLogPath);
  if (!row) {
    const expired = new RunStore(parentLogPath).readCheckpoints().filter((r) => typeof r.state_path === 'string').length;
    const why = expired ? ` (all ${expired} that had one expired: their ttl_seconds ran out and the backend deleted them)` : '';
    throw new ConfigError(`continue: ${join(parentLogPath, 'checkpoints.jsonl')} has no checkpoint with a state_path to continue from${why}`);
  }
  if (typeof row.next_step !== 'number') {
    throw new ConfigError(`continue: checkpoint "${row.name}" in ${join(parentLogPath, 'checkpoints.jsonl')} has no next_step (written before runs recorded it); start a new run with load_checkpoint_path=${row.state_path} load_checkpoint_with_optimizer=true instead`);
  }
  // The parent's own identity and start point are not inherited.
  const { log_path: _l, run_name: parentName, continue_from: _c, ...inherited } = parent.config;
  const source = join(parentLogPath, 'config.json');
  const config = parseWithOverrides(TRAINABLE_KINDS[kind].schema, { ...inherited, load_checkpoint_path: row.state_path, load_checkpoint_with_optimizer: true }, overrides, source) as Record<string, any>;
  const resumeState = row.resume_state && typeof row.resume_state === 'object' ? (row.resume_state as Record<string, unknown>) : null;
  config.continue_from = {
    log_path: parentLogPath,
    workflow_id: parent.workflowId,
    name: row.name,
    next_step: row.next_step,
    elapsed_tokens: typeof row.elapsed_tokens === 'number' ? row.elapsed_tokens : 0,
    // RL's token totals, as the reference's resume reads them back (rows written before: none).
    ...(row.cumulative_tokens ? tokenLoopState(tokenTotalsFromLoopState(row)) : {}),
    resume_state: resumeState,
  };
  checkReferenceInherited(kind, config, resumeState, row, parentLogPath);
  if (config.check_checkpoint_metadata) {
    const conflicts = metadataConflicts(row, config as MetadataConfig, `checkpoint "${row.name}" of ${parentLogPath}`);
    if (conflicts.length) throw new ConfigError(conflicts.join('\n'));
  }
  const name = config.run_name ?? `${typeof parentName === 'string' ? parentName : 'run'}-continued`;
  const workflowId = opts.workflowId ?? runIdFor(kind, name);
  const logPathFromId = config.log_path == null;
  const logPath = runLogPath(config.log_path, opts.runsDir, workflowId);
  if (logPath === (isObjectStoreUri(parentLogPath) ? parentLogPath : resolve(parentLogPath))) throw new ConfigError(`log_path: ${logPath} is the parent run's directory; a continued run writes its own`);
  checkLogPathFree(logPath);
  config.log_path = logPath;
  return { kind, workflowId, config, run: { workflowId, kind, logPath }, ...(opts.workflowId ? {} : { generatedId: { logPathFromId } }) };
}

/** A continued DPO run against its starting weights needs the parent's reference, which the row records. */
function checkReferenceInherited(kind: RunKind, config: Record<string, any>, resumeState: Record<string, unknown> | null, row: CheckpointRow, parentLogPath: string): void {
  // Without the parent's reference path the reference would be retaken from the continued weights.
  if (kind === 'dpo' && config.reference_model?.kind === 'initial' && typeof resumeState?.reference_path !== 'string') {
    throw new ConfigError(
      `reference_model: checkpoint "${row.name}" in ${join(parentLogPath, 'checkpoints.jsonl')} records no reference_path (written before runs recorded it); ` +
        `set reference_model={"kind":"sampler_path","path":"<the parent's reference sampler>"} to continue`,
    );
  }
}

/** A parent still running would keep training the weights its checkpoint was taken from. */
export async function checkParentSettled(client: Client, workflowId: string): Promise<void> {
  let status: string;
  try {
    status = (await client.workflow.getHandle(workflowId).describe()).status.name;
  } catch {
    return; // unknown to this Temporal server (another server, or history gone): its files decide
  }
  if (status === 'RUNNING') throw new ConfigError(`continue: run ${workflowId} is still running; stop it first (\`cookbook stop ${workflowId}\`)`);
}

export const TRACK_USAGE = `  track <id or log dir>               mirror a run to W&B now (WANDB_API_KEY: online; else an offline run dir)`;
