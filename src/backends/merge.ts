// Combining the results of a chunked forward/forward_backward (§9.7, SDK
// lib/chunked_fwdbwd_helpers.py): outputs are concatenated in datum order; metrics are reduced by
// the `:reduction` suffix of their key, weighted by each chunk's datum count.
import type { ForwardBackwardOutput } from './types.js';

const MASK64 = (1n << 64n) - 1n;
const P1 = 11400714785074694791n;
const P2 = 14029467366897019727n;
const P5 = 2870177450012600261n;
const HASH_MODULUS = (1n << 61n) - 1n;

function pyIntHash(v: bigint): bigint {
  // CPython's hash of an int: sign-preserving reduction mod 2^61 − 1, with −1 mapped to −2.
  const neg = v < 0n;
  let h = (neg ? -v : v) % HASH_MODULUS;
  if (neg) h = -h;
  return h === -1n ? -2n : h;
}

function rotl31(x: bigint): bigint {
  return ((x << 31n) | (x >> 33n)) & MASK64;
}

/**
 * `hash(tuple(sorted(int(x) for x in xs)))` exactly as 64-bit CPython ≥3.8 computes it (xxHash-style
 * tuple hash), so an order-insensitive hash metric merges to the same number as the Python SDK.
 */
export function orderInsensitiveHash(xs: readonly number[]): number {
  const ints = xs.map((x) => BigInt(Math.trunc(x))).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let acc = P5;
  for (const v of ints) {
    const lane = pyIntHash(v) & MASK64;
    acc = (acc + lane * P2) & MASK64;
    acc = rotl31(acc);
    acc = (acc * P1) & MASK64;
  }
  acc = (acc + (BigInt(ints.length) ^ (P5 ^ 3527539n))) & MASK64;
  if (acc === MASK64) return 1546275796;
  // Python's Py_hash_t is signed.
  return Number(BigInt.asIntN(64, acc));
}

function weightedMean(values: number[], weights: number[]): number {
  const total = weights.reduce((a, b) => a + b, 0);
  if (total === 0) return values.reduce((a, b) => a + b, 0) / values.length;
  return values.reduce((acc, v, i) => acc + v * weights[i], 0) / total;
}

/** Unknown reductions, malformed keys and keys missing from any chunk are dropped (as the SDK does). */
export function mergeMetrics(chunks: ReadonlyArray<Record<string, number>>, weights: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  if (chunks.length === 0) return out;
  for (const key of Object.keys(chunks[0])) {
    const parts = key.split(':');
    if (parts.length !== 2) continue;
    if (!chunks.every((m) => key in m)) continue;
    const values = chunks.map((m) => m[key]);
    switch (parts[1]) {
      case 'mean':
        out[key] = weightedMean(values, weights);
        break;
      case 'sum':
        out[key] = values.reduce((a, b) => a + b, 0);
        break;
      case 'min':
        out[key] = Math.min(...values);
        break;
      case 'max':
        out[key] = Math.max(...values);
        break;
      case 'slack':
        out[key] = Math.max(...values) - weightedMean(values, weights);
        break;
      case 'hash_unordered':
        out[key] = orderInsensitiveHash(values);
        break;
      case 'unique':
        out[key] = values[0];
        values.slice(1).forEach((v, i) => (out[`${key}_${i + 1}`] = v));
        break;
      default:
        break;
    }
  }
  return out;
}

export function combineForwardBackwardOutputs(results: readonly ForwardBackwardOutput[]): ForwardBackwardOutput {
  if (results.length === 0) return { loss_fn_output_type: '', loss_fn_outputs: [], metrics: {} };
  return {
    loss_fn_output_type: results[0].loss_fn_output_type,
    loss_fn_outputs: results.flatMap((r) => r.loss_fn_outputs),
    metrics: mergeMetrics(
      results.map((r) => r.metrics),
      results.map((r) => r.loss_fn_outputs.length),
    ),
  };
}
