import { describe, expect, it } from 'vitest';
import { chunkData, estimateDatumBytes } from '../../src/backends/chunking.js';
import { combineForwardBackwardOutputs, mergeMetrics, orderInsensitiveHash } from '../../src/backends/merge.js';
import type { Datum, ForwardBackwardOutput } from '../../src/backends/types.js';

const datum = (n: number): Datum => ({
  model_input: { chunks: [{ type: 'encoded_text', tokens: Array.from({ length: n }, (_, i) => i) }] },
  loss_fn_inputs: {
    target_tokens: { data: Array.from({ length: n }, (_, i) => i + 1), dtype: 'int64' },
    weights: { data: new Array(n).fill(1), dtype: 'float32' },
  },
});

describe('chunking (§5.3)', () => {
  it('estimates bytes like SDK 0.25: 4 B/token + tensor nbytes + raw image bytes', () => {
    expect(estimateDatumBytes(datum(10))).toBe(10 * 4 + 10 * 8 + 10 * 4);
    const img: Datum = { model_input: { chunks: [{ type: 'image', data: Buffer.alloc(100).toString('base64'), format: 'png' }] }, loss_fn_inputs: {} };
    expect(estimateDatumBytes(img)).toBe(100);
  });

  it('closes a chunk at maxLen datums', () => {
    const chunks = chunkData([1, 2, 3, 4, 5].map(datum), 2, 1e9);
    expect(chunks.map((c) => c.length)).toEqual([2, 2, 1]);
  });

  it('closes a chunk before the byte budget is exceeded; an oversized datum gets its own chunk', () => {
    const d = [datum(10), datum(10), datum(100), datum(1)]; // 160, 160, 1600, 16 bytes
    expect(chunkData(d, 1024, 400).map((c) => c.length)).toEqual([2, 1, 1]);
    expect(chunkData(d, 1024, 320).map((c) => c.length)).toEqual([2, 1, 1]);
    expect(chunkData(d, 1024, 319).map((c) => c.length)).toEqual([1, 1, 1, 1]);
    expect(chunkData([], 2, 10)).toEqual([]);
  });

  it('is a pure function of the data (retries reuse the same seq ids)', () => {
    const d = Array.from({ length: 9 }, (_, i) => datum(i + 1));
    expect(chunkData(d, 3, 200)).toEqual(chunkData(structuredClone(d), 3, 200));
  });
});

describe('metrics merging (§9.7)', () => {
  it('applies each reduction, weighting mean and slack by datum counts', () => {
    const m = mergeMetrics(
      [
        { 'loss:sum': 1, 'acc:mean': 1, 'lo:min': 3, 'hi:max': 3, 'gap:slack': 4, 'clock:unique': 7 },
        { 'loss:sum': 2, 'acc:mean': 0, 'lo:min': 1, 'hi:max': 5, 'gap:slack': 1, 'clock:unique': 8 },
        { 'loss:sum': 3, 'acc:mean': 0, 'lo:min': 2, 'hi:max': 4, 'gap:slack': 1, 'clock:unique': 9 },
      ],
      [2, 1, 1],
    );
    expect(m).toEqual({
      'loss:sum': 6,
      'acc:mean': 0.5,
      'lo:min': 1,
      'hi:max': 5,
      'gap:slack': 4 - (4 * 2 + 1 + 1) / 4,
      'clock:unique': 7,
      'clock:unique_1': 8,
      'clock:unique_2': 9,
    });
  });

  it('drops unknown reductions, keys without exactly one colon, and keys missing from a chunk', () => {
    const m = mergeMetrics(
      [
        { 'a:median': 1, plain: 2, 'x:y:sum': 3, 'only:sum': 4, 'ok:sum': 1 },
        { 'a:median': 1, plain: 2, 'x:y:sum': 3, 'ok:sum': 1 },
      ],
      [1, 1],
    );
    expect(m).toEqual({ 'ok:sum': 2 });
  });

  it('hash_unordered equals CPython hash(tuple(sorted(ints)))', () => {
    // Values computed with CPython 3 (64-bit): hash(tuple(sorted([7, 3, -1, 2**62, -5]))) etc.
    expect(BigInt(orderInsensitiveHash([7, 3, -1, 2 ** 62, -5]))).toBe(BigInt(Number(7337991333153660468n)));
    expect(BigInt(orderInsensitiveHash([]))).toBe(BigInt(Number(5740354900026072187n)));
    expect(BigInt(orderInsensitiveHash([5]))).toBe(BigInt(Number(-7813438383599366905n)));
    expect(orderInsensitiveHash([1, 2, 3])).toBe(orderInsensitiveHash([3, 1, 2]));
    expect(mergeMetrics([{ 'h:hash_unordered': 3 }, { 'h:hash_unordered': 1 }], [1, 1])['h:hash_unordered']).toBe(orderInsensitiveHash([1, 3]));
  });

  it('concatenates outputs in chunk order', () => {
    const out = (lp: number[][], metrics: Record<string, number>): ForwardBackwardOutput => ({
      loss_fn_output_type: 'CrossEntropyLossReturn',
      loss_fn_outputs: lp.map((d) => ({ logprobs: { data: d, dtype: 'float32', shape: [d.length] } })),
      metrics,
    });
    const merged = combineForwardBackwardOutputs([out([[-1], [-2]], { 'loss:sum': 3 }), out([[-3]], { 'loss:sum': 3 })]);
    expect(merged.loss_fn_outputs.map((o) => o.logprobs.data)).toEqual([[-1], [-2], [-3]]);
    expect(merged.metrics).toEqual({ 'loss:sum': 6 });
    expect(combineForwardBackwardOutputs([])).toEqual({ loss_fn_output_type: '', loss_fn_outputs: [], metrics: {} });
  });
});
