// Trajectory → datums (spec §2.5). Observations are flattened to token ids with image chunks kept
// as opaque elements; consecutive observations that extend the accumulated sequence are merged
// into one datum, and a non-prefix observation starts a new datum.

import type { Datum, ImageChunk, ModelInputChunk, ProvenanceSpan, TensorData } from '../../backends/types.js';
import { CookbookError } from '../errors.js';
import { f32 } from '../float32.js';
import { chunkLength } from '../model-input.js';
import { splitList } from '../misc-utils.js';
import { createRightshiftedModelInputAndLeftshiftedTargets } from '../supervised/datum.js';
import { getLogprobs, PARSE_ERROR_MASKED_METRIC_KEY, type Observation, type Trajectory, type TrajectoryGroup } from './types.js';

export { splitList };

type FlatElem = number | ImageChunk;

function flattenOb(ob: Observation): FlatElem[] {
  const out: FlatElem[] = [];
  for (const c of ob.chunks) {
    if (c.type === 'encoded_text') out.push(...c.tokens);
    else out.push(c);
  }
  return out;
}

function elemLength(e: FlatElem): number {
  return typeof e === 'number' ? 1 : chunkLength(e);
}

function flatLength(xs: readonly FlatElem[]): number {
  let n = 0;
  for (const e of xs) n += elemLength(e);
  return n;
}

function elemEqual(a: FlatElem, b: FlatElem): boolean {
  if (typeof a === 'number' || typeof b === 'number') return a === b;
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

function isPrefix(prefix: readonly FlatElem[], xs: readonly FlatElem[]): boolean {
  if (prefix.length > xs.length) return false;
  for (let i = 0; i < prefix.length; i++) if (!elemEqual(prefix[i], xs[i])) return false;
  return true;
}

function toChunks(xs: readonly FlatElem[]): ModelInputChunk[] {
  const chunks: ModelInputChunk[] = [];
  let text: number[] = [];
  for (const e of xs) {
    if (typeof e === 'number') text.push(e);
    else {
      if (text.length > 0) chunks.push({ type: 'encoded_text', tokens: text });
      text = [];
      chunks.push(e);
    }
  }
  if (text.length > 0) chunks.push({ type: 'encoded_text', tokens: text });
  return chunks;
}

const f32Tensor = (data: number[]): TensorData => ({ data: data.map((x) => f32(x)), dtype: 'float32', shape: [data.length] });

interface Accumulator {
  fullSequence: FlatElem[];
  sampledLogprobs: number[];
  advantages: number[];
  mask: number[];
  /**
   * Where each position of fullSequence came from while every action so far has a sequence id;
   * null once one does not.
   */
  spans: ProvenanceSpan[] | null;
}

function emptyAcc(): Accumulator {
  return { fullSequence: [], sampledLogprobs: [], advantages: [], mask: [], spans: [] };
}

/** The same runs without their first position (the targets start one token in). */
function dropFirstPosition(spans: ProvenanceSpan[]): ProvenanceSpan[] {
  const [first, ...rest] = spans;
  if (first.length === 1) return rest;
  return [{ ...first, offset: first.offset + 1, length: first.length - 1 }, ...rest];
}

/** The same runs without their last position (the input stops one token short). */
function dropLastPosition(spans: ProvenanceSpan[]): ProvenanceSpan[] {
  const last = spans[spans.length - 1];
  const rest = spans.slice(0, -1);
  if (last.length === 1) return rest;
  return [...rest, { ...last, length: last.length - 1 }];
}

function makeDatum(acc: Accumulator): Datum {
  const { modelInput, targetTokens } = createRightshiftedModelInputAndLeftshiftedTargets(toChunks(acc.fullSequence));
  const n = targetTokens.length;
  const datum: Datum = {
    model_input: modelInput,
    loss_fn_inputs: {
      target_tokens: { data: targetTokens, dtype: 'int64', shape: [n] },
      logprobs: f32Tensor(acc.sampledLogprobs.slice(1)),
      advantages: f32Tensor(acc.advantages.slice(1)),
      mask: f32Tensor(acc.mask.slice(1)),
    },
  };
  if (!acc.spans || acc.spans.length === 0) return datum;
  const targetSpans = dropFirstPosition(acc.spans);
  // Provenance only when something sampled is trained on (the reference's rule).
  if (!targetSpans.some((span) => span.kind === 'sampled')) return datum;
  return { ...datum, model_input_spans: dropLastPosition(acc.spans), loss_fn_input_spans: targetSpans };
}

/**
 * The datums of one trajectory with its (float32) advantage. With `includeProvenance` (default, as
 * the reference) a datum whose actions all carry a sampling `sequenceId` also says where each token
 * came from: observation tokens are positions of the prompt of the request that saw them, action
 * tokens the sampled tokens of their sequence (SDK 0.38 Datum.with_provenance).
 */
export function trajectoryToData(traj: Trajectory, trajAdvantage: number, includeProvenance = true): Datum[] {
  const data: Datum[] = [];
  let acc = emptyAcc();
  for (const t of traj.transitions) {
    const ob = flattenOb(t.ob);
    let delta: FlatElem[];
    if (acc.fullSequence.length === 0) delta = ob;
    else if (isPrefix(acc.fullSequence, ob)) delta = ob.slice(acc.fullSequence.length);
    else {
      data.push(makeDatum(acc));
      acc = emptyAcc();
      delta = ob;
    }
    const deltaLen = flatLength(delta);
    const acTokens = t.ac.tokens;
    if (!includeProvenance) acc.spans = null;
    const sequenceId = t.ac.sequenceId ?? null;
    // A transition without tokens contributes nothing to the datum, so needs no provenance.
    if (sequenceId === null && (deltaLen > 0 || acTokens.length > 0)) acc.spans = null;
    if (acc.spans && sequenceId !== null) {
      // The new observation tokens are the end of this request's prompt.
      if (deltaLen > 0) acc.spans.push({ kind: 'prompt', sequence_id: sequenceId, offset: flatLength(acc.fullSequence), length: deltaLen });
      if (acTokens.length > 0) acc.spans.push({ kind: 'sampled', sequence_id: sequenceId, offset: 0, length: acTokens.length });
    }
    const masked = (t.metrics[PARSE_ERROR_MASKED_METRIC_KEY] ?? 0) >= 1.0;
    const acLogprobs = acTokens.length === 0 ? [] : getLogprobs(t.ac);
    if (acLogprobs.length !== acTokens.length) {
      throw new RangeError(`action has ${acTokens.length} tokens but ${acLogprobs.length} logprobs`);
    }
    acc.fullSequence.push(...delta, ...acTokens);
    for (let i = 0; i < deltaLen; i++) {
      acc.sampledLogprobs.push(0);
      acc.advantages.push(0);
      acc.mask.push(0);
    }
    for (let i = 0; i < acTokens.length; i++) {
      acc.sampledLogprobs.push(acLogprobs[i]);
      acc.advantages.push(masked ? 0 : trajAdvantage);
      acc.mask.push(masked ? 0 : 1);
    }
  }
  if (acc.fullSequence.length > 0) data.push(makeDatum(acc));
  return data;
}

export interface DatumMetadata {
  group_idx: number;
  traj_idx: number;
}

/** Datums of every trajectory, in group then trajectory order, with where each came from. */
export function assembleTrainingData(
  groups: readonly TrajectoryGroup[],
  advantages: readonly number[][],
): { data_D: Datum[]; metadata_D: DatumMetadata[] } {
  if (groups.length !== advantages.length) {
    throw new RangeError(`${groups.length} groups but ${advantages.length} advantage lists`);
  }
  const data_D: Datum[] = [];
  const metadata_D: DatumMetadata[] = [];
  groups.forEach((g, i) => {
    if (g.trajectoriesG.length !== advantages[i].length) {
      throw new RangeError(`group ${i}: ${g.trajectoriesG.length} trajectories but ${advantages[i].length} advantages`);
    }
    g.trajectoriesG.forEach((traj, j) => {
      for (const d of trajectoryToData(traj, advantages[i][j])) {
        data_D.push(d);
        metadata_D.push({ group_idx: i, traj_idx: j });
      }
    });
  });
  return { data_D, metadata_D };
}

/** The datum as sent to the server: the mask stays client-side (spec §2.6, §9.5). */
export function removeMask(datum: Datum): Datum {
  const { mask: _mask, ...rest } = datum.loss_fn_inputs;
  const sent: Datum = { model_input: datum.model_input, loss_fn_inputs: rest };
  if (datum.model_input_spans) {
    sent.model_input_spans = datum.model_input_spans;
    sent.loss_fn_input_spans = datum.loss_fn_input_spans;
  }
  return sent;
}

/**
 * The reference's `_check_provenance`: stable_reinforce trains on what the sampler recorded, so
 * every datum must say where its tokens came from. Called on a step's data before any is sent.
 */
export function checkProvenance(data: readonly Datum[], lossFn: string): void {
  if (lossFn !== 'stable_reinforce') return;
  const i = data.findIndex((d) => d.loss_fn_input_spans === undefined);
  if (i >= 0) {
    throw new CookbookError(
      `loss_fn 'stable_reinforce' needs provenance on every datum, and datum ${i} has none: one of its actions lacks a ` +
        'sampling sequence id (TokensWithLogprobs.sequenceId, which a custom TokenCompleter must set) or none of its ' +
        'targets is a sampled token. Fix the data or train with a different loss_fn.',
    );
  }
}

/**
 * The datum as sent for `lossFn`. gspo takes its sequence ratio over the tokens
 * `sequence_ratio_mask` marks: the sampled action tokens, i.e. the client-side mask (as the
 * reference's rl_loop recipe builds it).
 */
export function datumForLoss(datum: Datum, lossFn: string): Datum {
  const sent = removeMask(datum);
  if (lossFn !== 'gspo') return sent;
  const mask = datum.loss_fn_inputs.mask;
  if (!mask) throw new RangeError('gspo needs the action mask of every datum to build sequence_ratio_mask');
  return { ...sent, loss_fn_inputs: { ...sent.loss_fn_inputs, sequence_ratio_mask: mask } };
}

/**
 * Streaming minibatches (spec §2.9): the groups of a batch, in order, split into `numSubsteps`
 * optimizer substeps of `numMinibatches` minibatches each; every entry is a [start, end) range of
 * group positions. The reference fills minibatches in rollout completion order; here positions are
 * taken in group order so that a replayed step trains on the same minibatches.
 */
export function streamMinibatchRanges(groupsPerBatch: number, numSubsteps: number, numMinibatches: number): Array<Array<[number, number]>> {
  if (groupsPerBatch % numSubsteps !== 0) throw new RangeError(`groups_per_batch ${groupsPerBatch} must be divisible by num_substeps ${numSubsteps}`);
  const perSubstep = groupsPerBatch / numSubsteps;
  if (perSubstep % numMinibatches !== 0) throw new RangeError(`${perSubstep} groups per substep must be divisible by num_minibatches ${numMinibatches}`);
  const perMinibatch = perSubstep / numMinibatches;
  return Array.from({ length: numSubsteps }, (_, s) =>
    Array.from({ length: numMinibatches }, (_, m): [number, number] => {
      const start = s * perSubstep + m * perMinibatch;
      return [start, start + perMinibatch];
    }),
  );
}
