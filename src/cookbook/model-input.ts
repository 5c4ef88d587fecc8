// Small helpers over the backend's ModelInput shape (the Tinker SDK's ModelInput methods).

import type { EncodedTextChunk, ModelInput, ModelInputChunk } from '../backends/types.js';

export function chunkLength(chunk: ModelInputChunk): number {
  if (chunk.type === 'encoded_text') return chunk.tokens.length;
  if (chunk.expected_tokens === undefined) {
    throw new Error('image chunk without expected_tokens has no known length');
  }
  return chunk.expected_tokens;
}

export function modelInputLength(mi: ModelInput): number {
  let n = 0;
  for (const c of mi.chunks) n += chunkLength(c);
  return n;
}

/** All tokens of a text-only ModelInput (`ModelInput.to_ints()`); throws on images. */
export function modelInputToInts(mi: ModelInput): number[] {
  const out: number[] = [];
  for (const c of mi.chunks) {
    if (c.type !== 'encoded_text') throw new Error('modelInputToInts: ModelInput contains an image chunk');
    for (const t of c.tokens) out.push(t);
  }
  return out;
}

export function textChunk(tokens: number[]): EncodedTextChunk {
  return { type: 'encoded_text', tokens };
}

export function modelInputFromInts(tokens: number[]): ModelInput {
  return { chunks: [textChunk(tokens)] };
}
