// Datum construction (reference tc/supervised/common.py + data.py::conversation_to_datum,
// spec §1.3–§1.4): truncation, next-token shift, weight slicing and float32 reduction.

import type { Datum, ModelInput, ModelInputChunk } from '../../backends/types.js';
import { DataValidationError } from '../errors.js';
import { f32, sumF32 } from '../float32.js';
import { chunkLength } from '../model-input.js';
import type { Message, Renderer } from '../renderers/types.js';
import { TrainOnWhat } from '../renderers/types.js';

export { DataValidationError };

export type Reduction = 'none' | 'mean';

/**
 * Input = every token but the last (a final text chunk of length 1 is dropped whole); targets =
 * every token but the first, image positions written as 0. The last chunk must be text.
 */
export function createRightshiftedModelInputAndLeftshiftedTargets(chunks: readonly ModelInputChunk[]): {
  modelInput: ModelInput;
  targetTokens: number[];
} {
  if (chunks.length === 0) throw new DataValidationError('must have at least one chunk');
  const last = chunks[chunks.length - 1];
  if (last.type !== 'encoded_text') {
    throw new DataValidationError(
      'The last chunk must be a text chunk. This is because images are 0-loss anyways, so we should remove them beforehand.',
    );
  }
  let total = 0;
  for (const c of chunks) total += chunkLength(c);
  if (total < 2) throw new DataValidationError('need at least 2 tokens for input/target split');

  const inputChunks: ModelInputChunk[] = chunks.slice(0, -1);
  if (last.tokens.length > 1) inputChunks.push({ type: 'encoded_text', tokens: last.tokens.slice(0, -1) });

  const all: number[] = [];
  for (const c of chunks) {
    if (c.type === 'encoded_text') all.push(...c.tokens);
    else for (let i = 0; i < chunkLength(c); i++) all.push(0);
  }
  return { modelInput: { chunks: inputChunks }, targetTokens: all.slice(1) };
}

function truncate(chunks: ModelInputChunk[], maxLength: number): ModelInputChunk[] {
  const out = [...chunks];
  let total = 0;
  for (const c of out) total += chunkLength(c);
  while (total > maxLength && out.length > 0) {
    const last = out[out.length - 1];
    const overflow = total - maxLength;
    if (last.type === 'encoded_text' && overflow < last.tokens.length) {
      out[out.length - 1] = { type: 'encoded_text', tokens: last.tokens.slice(0, last.tokens.length - overflow) };
      total = maxLength;
    } else {
      // A text chunk no longer than the overflow, or any image: images cannot be cut.
      out.pop();
      total -= chunkLength(last);
    }
  }
  return out;
}

/**
 * Turn a rendered example into a Datum: optional right truncation to `maxLength`, drop empty
 * text chunks and trailing images, shift, slice weights to `[1, len(targets)+1)`, reduce.
 * `mean` divides by the weight sum in float32 (1/3 → 0.3333333432674408); all-zero stays zero.
 */
export function datumFromModelInputWeights(
  modelInput: ModelInput,
  weights: readonly number[],
  maxLength: number | null = null,
  reduction: Reduction = 'none',
): Datum {
  let chunks: ModelInputChunk[] = [...modelInput.chunks];
  if (maxLength !== null && maxLength !== undefined) chunks = truncate(chunks, maxLength);
  // A trailing empty chunk would stop the shift from dropping the last real token.
  chunks = chunks.filter((c) => !(c.type === 'encoded_text' && c.tokens.length === 0));
  while (chunks.length > 0 && chunks[chunks.length - 1].type === 'image') chunks.pop();

  const { modelInput: input, targetTokens } = createRightshiftedModelInputAndLeftshiftedTargets(chunks);
  let w = weights.slice(1, targetTokens.length + 1).map((x) => f32(x));
  if (reduction === 'mean') {
    const total = sumF32(w);
    if (total > 0) w = w.map((x) => f32(x / total));
  } else if (reduction !== 'none') {
    throw new Error(`Unknown reduction mode: '${String(reduction)}'`);
  }
  return {
    model_input: input,
    loss_fn_inputs: {
      weights: { data: w, dtype: 'float32', shape: [w.length] },
      target_tokens: { data: targetTokens, dtype: 'int64', shape: [targetTokens.length] },
    },
  };
}

/** Render a conversation and build its datum. SFT default reduction is `mean` (spec §9.2). */
export function conversationToDatum(
  messages: Message[],
  renderer: Renderer,
  maxLength: number | null,
  trainOnWhat: TrainOnWhat = TrainOnWhat.ALL_ASSISTANT_MESSAGES,
  reduction: Reduction = 'mean',
): Datum {
  const { modelInput, weights } = renderer.buildSupervisedExample(messages, trainOnWhat);
  return datumFromModelInputWeights(modelInput, weights, maxLength, reduction);
}
