// A run's `capture` (run config): every sampled sequence of its rollouts becomes a wire row and every
// training call an annotation in the capture store, tagged with the run's coordinates (run id =
// workflow id, iteration, group_idx, traj_idx, purpose, policy_version = the sampler checkpoint
// path). Called from the activities that sample and train, never from workflow code.
//
// Keys are deterministic, from the run and the logical position (step, group, attempt, trajectory,
// turn; step, op): a retried activity produces the same keys, and the store keeps the first. The
// worker keeps one exporter per store; rows are handed to it and never awaited, so a slow or dead
// store costs a run nothing but the rows (counted by the exporter, reported on the worker's log).
import { createHash } from 'node:crypto';
import type { Datum, ModelInput } from '../backends/types.js';
import type { TrajectoryGroup } from '../cookbook/rl/types.js';
import type { RunRef } from '../cookbook/run-store.js';
import type { CaptureExporter } from './exporter.js';
import { nowSeconds, type CaptureRecord, type JsonValue, type WireRowInput } from './rows.js';
import { runCaptureTarget, type RunCaptureConfig } from './run-config.js';
import { isStoreUrl } from './target.js';

const exporters = new Map<string, Promise<CaptureExporter | null>>();

/** The worker's exporter to a store, made once; null (said once) when the store cannot be reached. */
function exporterFor(target: string): Promise<CaptureExporter | null> {
  let found = exporters.get(target);
  if (!found) {
    found = (async () => {
      const [{ captureStoreUrl }, { CaptureExporter }, { StoreHttpSink }] = await Promise.all([import('./target.js'), import('./exporter.js'), import('./http-sink.js')]);
      try {
        return new CaptureExporter(new StoreHttpSink(await captureStoreUrl(target)));
      } catch (err) {
        process.stderr.write(`capture: no store at ${isStoreUrl(target) ? target : target || 'the default folder'} (${(err as Error).message}); this worker's runs go on without capture\n`);
        return null;
      }
    })();
    exporters.set(target, found);
  }
  return found;
}

/** Hands records to the run's store without waiting; never throws. */
function send(capture: RunCaptureConfig | undefined, records: () => CaptureRecord[]): void {
  const target = runCaptureTarget(capture);
  if (target === undefined) return;
  let built: CaptureRecord[];
  try {
    built = records();
  } catch (err) {
    process.stderr.write(`capture: could not build rows (${(err as Error).message}); they are not recorded\n`);
    return;
  }
  void exporterFor(target).then((exporter) => {
    if (!exporter) return;
    for (const r of built) exporter.enqueue(r);
    reportDrops(target, exporter);
  });
}

const DROP_REPORT_INTERVAL_MS = 30_000;
const reported = new Map<string, { dropped: number; at: number }>();

/** A full queue drops rows (the store is behind): said on the worker's log, at most every 30 s per store. */
function reportDrops(target: string, exporter: CaptureExporter): void {
  const { dropped } = exporter.counters();
  const last = reported.get(target) ?? { dropped: 0, at: 0 };
  if (dropped > last.dropped && Date.now() - last.at >= DROP_REPORT_INTERVAL_MS) {
    process.stderr.write(`capture (${target || 'default store'}): ${dropped} rows dropped so far (queue full: the store is behind)\n`);
    reported.set(target, { dropped, at: Date.now() });
  }
}

/**
 * At the worker's shutdown: sends what is queued (waiting at most `timeoutMs`) and stops; one line
 * per store saying what was kept and what was lost (none when capture was never on).
 */
export async function closeRunCapture(timeoutMs = 10_000): Promise<string[]> {
  const open = [...exporters.entries()];
  exporters.clear();
  const lines: string[] = [];
  for (const [target, pending] of open) {
    const exporter = await pending;
    if (!exporter) continue;
    await exporter.close(timeoutMs);
    const c = exporter.counters();
    lines.push(`capture (${target || 'default store'}): ${c.sent} records stored, ${c.dropped} dropped (queue full), ${c.failed} failed to send, ${c.invalid} invalid, ${c.queued} unsent`);
  }
  return lines;
}

/** Waits (at most `timeoutMs`) until every exporter of this process sent what it was given. */
export async function flushRunCapture(timeoutMs = 10_000): Promise<boolean> {
  const all = await Promise.all(exporters.values());
  const done = await Promise.all(all.map((e) => e?.flush(timeoutMs) ?? true));
  return done.every(Boolean);
}

function textTokens(input: ModelInput): number[] {
  const out: number[] = [];
  for (const c of input.chunks) if (c.type === 'encoded_text') out.push(...c.tokens);
  return out;
}

export interface RolloutCoordinates {
  run: RunRef;
  iteration: number;
  group: number;
  /** How often the group was sampled before (async RL requeues stale groups). */
  attempt: number;
  purpose: 'rollout' | 'eval';
  /** The sampler checkpoint the group sampled from. */
  policyVersion: string;
}

/** The rows of one trajectory group: one per sampled sequence (trajectory × turn). */
export function rolloutRows(group: TrajectoryGroup, c: RolloutCoordinates): WireRowInput[] {
  const totals = group.getTotalRewards();
  const session = `${c.run.workflowId}/${c.purpose}/${c.iteration}/${c.group}/${c.attempt}`;
  const createdAt = nowSeconds();
  return group.trajectoriesG.flatMap((traj, t) =>
    traj.transitions.map((tr, turn): WireRowInput => {
      const images = tr.ob.chunks.filter((ch) => ch.type !== 'encoded_text').length;
      const metadata = {
        reward: totals[t],
        step_reward: tr.reward,
        final_reward: group.finalRewardsG[t],
        turn,
        episode_done: tr.episodeDone,
        stop_reason: tr.ac.stopReason,
        trajectory_stop_reason: traj.stopReason,
        prompt_images: images,
        log_path: c.run.logPath,
      };
      return {
        run_id: c.run.workflowId,
        run_attempt: c.attempt,
        split: c.purpose === 'eval' ? 'test' : 'train',
        iteration: c.iteration,
        group_idx: c.group,
        traj_idx: t,
        purpose: c.purpose,
        sampling_session_id: session,
        seq_id: turn,
        sample_idx: t,
        policy_version: c.policyVersion,
        created_at: createdAt,
        prompt_tokens: textTokens(tr.ob),
        sampled_tokens: tr.ac.tokens,
        logprobs: tr.ac.maybeLogprobs,
        metadata: JSON.parse(JSON.stringify(metadata)) as JsonValue,
      };
    }),
  );
}

export function captureRollouts(capture: RunCaptureConfig | undefined, group: TrajectoryGroup, c: RolloutCoordinates): void {
  send(capture, () => rolloutRows(group, c).map((row) => ({ type: 'wire_row', row })));
}

/** A datum's whole sequence (its input and its last target): what was trained on, token for token. */
export function datumSequence(d: Datum): number[] {
  const targets = d.loss_fn_inputs.target_tokens?.data ?? [];
  return [...textTokens(d.model_input), ...(targets.length ? [targets[targets.length - 1] as number] : [])];
}

export const sequenceDigest = (tokens: readonly number[]) => createHash('sha256').update(JSON.stringify(tokens)).digest('hex');

export interface TrainOpCoordinates {
  run: RunRef;
  step: number;
  /** The optimizer substep within the step (RL's num_substeps, streaming minibatches); 0 for SL. */
  substep?: number;
  op: 'forward_backward' | 'optim_step';
  modelId: string;
  details?: Record<string, JsonValue>;
}

/**
 * A training call as an annotation (kind `train_op`, as the reference's): per datum its length,
 * trained-token weight and a digest of its tokens (not the tokens: a step's batch can be large), so
 * what a step trained on can be matched to the rows it came from.
 */
export function captureTrainOp(capture: RunCaptureConfig | undefined, c: TrainOpCoordinates, datums: readonly Datum[] = []): void {
  send(capture, () => [
    {
      type: 'annotation',
      annotation: {
        event_id: `${c.run.workflowId}/train/${c.step}/${c.substep ?? 0}/${c.op}`,
        run_id: c.run.workflowId,
        kind: 'train_op',
        created_at: nowSeconds(),
        payload: {
          op: c.op,
          iteration: c.step,
          substep: c.substep ?? 0,
          model_id: c.modelId,
          num_datums: datums.length,
          datums: datums.map((d) => {
            const seq = datumSequence(d);
            return { n_tokens: seq.length, weight_sum: d.loss_fn_inputs.weights?.data.reduce((a: number, b) => a + Number(b), 0) ?? 0, tokens_sha256: sequenceDigest(seq) };
          }),
          ...(c.details ?? {}),
        },
      },
    },
  ]);
}
