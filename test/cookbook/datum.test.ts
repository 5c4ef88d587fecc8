// Port of the reference's supervised/common_test.py datum cases (spec §1.3) plus float32 checks.
import { describe, expect, it } from 'vitest';
import type { ModelInput } from '../../src/backends/types.js';
import {
  DataValidationError,
  createRightshiftedModelInputAndLeftshiftedTargets,
  datumFromModelInputWeights,
} from '../../src/cookbook/supervised/datum.js';
import { modelInputLength } from '../../src/cookbook/model-input.js';

const mi = (...chunks: number[][]): ModelInput => ({ chunks: chunks.map((tokens) => ({ type: 'encoded_text', tokens })) });
const weightsOf = (d: ReturnType<typeof datumFromModelInputWeights>) => d.loss_fn_inputs.weights.data;
const targetsOf = (d: ReturnType<typeof datumFromModelInputWeights>) => d.loss_fn_inputs.target_tokens.data;

describe('datumFromModelInputWeights', () => {
  it('mean reduction sums to one (float32 thirds)', () => {
    const d = datumFromModelInputWeights(mi([10, 20, 30, 40, 50]), [0, 0, 1, 1, 1], null, 'mean');
    expect(weightsOf(d)).toEqual([0, 0.3333333432674408, 0.3333333432674408, 0.3333333432674408]);
    expect(Math.abs(weightsOf(d).reduce((a, b) => a + b) - 1)).toBeLessThan(1e-6);
    expect(d.loss_fn_inputs.weights.dtype).toBe('float32');
    expect(d.loss_fn_inputs.weights.shape).toEqual([4]);
  });

  it('none preserves the sliced weights', () => {
    const d = datumFromModelInputWeights(mi([10, 20, 30, 40, 50]), [0, 0, 1, 1, 1], null, 'none');
    expect(weightsOf(d)).toEqual([0, 1, 1, 1]);
  });

  it('default reduction is none', () => {
    const d = datumFromModelInputWeights(mi([10, 20, 30, 40, 50]), [0, 0, 1, 1, 1]);
    expect(weightsOf(d)).toEqual([0, 1, 1, 1]);
  });

  it('all-zero weights with mean stay zero', () => {
    const d = datumFromModelInputWeights(mi([10, 20, 30]), [0, 0, 0], null, 'mean');
    expect(weightsOf(d)).toEqual([0, 0]);
  });

  it('single non-zero weight normalises to one', () => {
    const d = datumFromModelInputWeights(mi([10, 20, 30]), [0, 0, 5], null, 'mean');
    expect(weightsOf(d)).toEqual([0, 1]);
  });

  it('targets are the left shift and the input drops the last token', () => {
    const d = datumFromModelInputWeights(mi([10, 20, 30, 40]), [1, 1, 1, 1]);
    expect(targetsOf(d)).toEqual([20, 30, 40]);
    expect(d.model_input).toEqual(mi([10, 20, 30]));
    expect(d.loss_fn_inputs.target_tokens.dtype).toBe('int64');
  });

  it('a trailing empty text chunk does not keep the last real token', () => {
    const d = datumFromModelInputWeights(mi([10], [20, 30], []), [1, 1, 1]);
    expect(modelInputLength(d.model_input)).toBe(2);
    expect(d.model_input).toEqual(mi([10], [20]));
    expect(targetsOf(d)).toEqual([20, 30]);
  });

  it('max_length=4 with 6 tokens gives 3 targets, mean sums to 1', () => {
    const d = datumFromModelInputWeights(mi([10, 20, 30, 40, 50, 60]), [0, 1, 1, 1, 1, 1], 4, 'mean');
    expect(weightsOf(d)).toHaveLength(3);
    expect(weightsOf(d)).toEqual([0.3333333432674408, 0.3333333432674408, 0.3333333432674408]);
  });

  it('max_length truncation without reduction', () => {
    const d = datumFromModelInputWeights(mi([10, 20, 30, 40, 50, 60]), [0, 1, 1, 1, 1, 1], 4, 'none');
    expect(weightsOf(d)).toEqual([1, 1, 1]);
    expect(targetsOf(d)).toEqual([20, 30, 40]);
  });

  it('truncation drops whole chunks no longer than the overflow, then cuts text', () => {
    // 3 + 2 + 2 tokens, max 4: drop [6,7] (overflow 3 ≥ 2), then cut [4,5] by 1.
    const d = datumFromModelInputWeights(mi([1, 2, 3], [4, 5], [6, 7]), [1, 1, 1, 1, 1, 1, 1], 4);
    expect(d.model_input).toEqual(mi([1, 2, 3]));
    expect(targetsOf(d)).toEqual([2, 3, 4]);
  });

  it('trailing images are dropped and image positions become target 0', () => {
    const input: ModelInput = {
      chunks: [
        { type: 'encoded_text', tokens: [1, 2] },
        { type: 'image', data: '', format: 'png', expected_tokens: 2 },
        { type: 'encoded_text', tokens: [3, 4] },
        { type: 'image', data: '', format: 'png', expected_tokens: 3 },
      ],
    };
    const d = datumFromModelInputWeights(input, [0, 0, 0, 0, 1, 1, 0, 0, 0]);
    expect(targetsOf(d)).toEqual([2, 0, 0, 3, 4]);
    expect(weightsOf(d)).toEqual([0, 0, 0, 1, 1]);
    expect(d.model_input.chunks.map((c) => c.type)).toEqual(['encoded_text', 'image', 'encoded_text']);
  });

  it('an unknown reduction raises', () => {
    expect(() => datumFromModelInputWeights(mi([10, 20, 30]), [0, 1, 1], null, 'invalid' as never)).toThrow(
      /Unknown reduction mode/,
    );
  });

  it('needs at least 2 tokens', () => {
    expect(() => datumFromModelInputWeights(mi([10]), [1])).toThrow(DataValidationError);
    expect(() => datumFromModelInputWeights(mi([10, 20, 30]), [1, 1, 1], 1)).toThrow(
      'need at least 2 tokens for input/target split',
    );
  });
});

describe('createRightshiftedModelInputAndLeftshiftedTargets', () => {
  it('drops a last chunk of length 1 entirely', () => {
    const r = createRightshiftedModelInputAndLeftshiftedTargets(mi([1, 2], [3]).chunks);
    expect(r.modelInput).toEqual(mi([1, 2]));
    expect(r.targetTokens).toEqual([2, 3]);
  });

  it('requires the last chunk to be text', () => {
    expect(() =>
      createRightshiftedModelInputAndLeftshiftedTargets([
        { type: 'encoded_text', tokens: [1, 2] },
        { type: 'image', data: '', format: 'png', expected_tokens: 1 },
      ]),
    ).toThrow(/last chunk must be a text chunk/);
  });
});
