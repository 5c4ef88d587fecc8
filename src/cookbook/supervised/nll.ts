// Batch NLL and bits-per-byte (reference tc/supervised/common.py, spec §1.3).

import { dotF32, f32, sumF32 } from '../float32.js';

/** What compute_bpb needs from a tokenizer. */
export interface BpbTokenizer {
  allSpecialIds?: readonly number[];
  isSpecialToken?(id: number): boolean;
  decode(ids: number[], opts?: { skipSpecialTokens?: boolean }): string;
}

/**
 * −Σ_d (lp_d · w_d) / Σ_d Σ w_d over the batch, in float32 like the reference's torch tensors.
 * NaN (with a warning) when the total weight is 0.
 */
export function computeMeanNll(logprobs_D: readonly number[][], weights_D: readonly number[][]): number {
  if (logprobs_D.length !== weights_D.length) {
    throw new Error(`computeMeanNll: ${logprobs_D.length} logprob rows vs ${weights_D.length} weight rows`);
  }
  let weighted = 0;
  let total = 0;
  for (let d = 0; d < logprobs_D.length; d++) {
    weighted = f32(weighted + dotF32(logprobs_D[d], weights_D[d]));
    total = f32(total + sumF32(weights_D[d]));
  }
  if (total === 0) {
    console.warn('[cookbook] No valid weights found for NLL computation');
    return NaN;
  }
  return f32(-weighted / total);
}

const utf8Length = (s: string): number => Buffer.byteLength(s, 'utf8');

/**
 * Bits per byte: −Σ logprob over counted tokens / (ln 2 · UTF-8 bytes of the counted text).
 * A token counts iff its weight is > 0 (a mask, never a multiplier) and it is not special; each
 * maximal run of counted tokens is decoded on its own. NaN when no bytes are counted.
 */
export function computeBpb(
  logprobs_D: readonly number[][],
  weights_D: readonly number[][],
  targetTokens_D: readonly number[][],
  tokenizer: BpbTokenizer,
): number {
  const special = new Set(tokenizer.allSpecialIds ?? []);
  const isSpecial = (id: number) => special.has(id) || (tokenizer.isSpecialToken?.(id) ?? false);
  let nllNats = 0;
  let bytes = 0;
  for (let d = 0; d < logprobs_D.length; d++) {
    const lp = logprobs_D[d];
    const w = weights_D[d];
    const ids = targetTokens_D[d];
    if (lp.length !== w.length || w.length !== ids.length) {
      throw new Error(`computeBpb: datum ${d} has ${lp.length} logprobs, ${w.length} weights, ${ids.length} targets`);
    }
    // The per-datum masked sum is a float32 tensor sum; the batch total is a Python float.
    let masked = 0;
    let run: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      if (w[i] > 0 && !isSpecial(ids[i])) {
        masked = f32(masked + f32(lp[i]));
        run.push(ids[i]);
      } else if (run.length) {
        bytes += utf8Length(tokenizer.decode(run, { skipSpecialTokens: false }));
        run = [];
      }
    }
    if (run.length) bytes += utf8Length(tokenizer.decode(run, { skipSpecialTokens: false }));
    nllNats += -masked;
  }
  if (bytes === 0) {
    console.warn('[cookbook] No target bytes found for BPB computation');
    return NaN;
  }
  return nllNats / (Math.LN2 * bytes);
}
