// Training datums for decisions (reference recipes/decisions/train.py), rendered by the same
// DecisionRenderer that samples. Shape suffixes: T token positions, K choices.
import type { Datum } from '../../../backends/types.js';
import { DataValidationError } from '../../errors.js';
import { f32 } from '../../float32.js';
import { modelInputFromInts } from '../../model-input.js';
import { datumFromModelInputWeights } from '../datum.js';
import { pyRepr, withLabel, type Decision, type DecisionRenderer } from './decision.js';

function checkLabel(decision: Decision, label: string): void {
  if (!decision.labels.includes(label)) {
    throw new DataValidationError(`target must be one of [${decision.labels.map(pyRepr).join(', ')}], got ${pyRepr(label)}`);
  }
}

/** One `cross_entropy` datum per (decision, correct label), weighting only the answer token. */
export function decisionChoiceDatums(renderer: DecisionRenderer, examples: ReadonlyArray<readonly [Decision, string]>): Datum[] {
  return examples.map(([decision, target]) => {
    checkLabel(decision, target);
    const rendering = renderer.render(decision);
    const tokens_T = withLabel(rendering, target);
    const weights_T = tokens_T.map((_, i) => (i === rendering.choicePos ? 1 : 0));
    return datumFromModelInputWeights(modelInputFromInts(tokens_T), weights_T);
  });
}

/**
 * One datum for `probabilityLoss` per (decision, target probabilities): labels map to
 * non-negative targets, an omitted label gets 0. The input stops before the answer position; the
 * last row of each (T, K) tensor holds the K choice tokens and their target probabilities.
 */
export function decisionDistDatums(renderer: DecisionRenderer, examples: ReadonlyArray<readonly [Decision, Readonly<Record<string, number>>]>): Datum[] {
  return examples.map(([decision, targetProbs]) => {
    for (const [label, prob] of Object.entries(targetProbs)) {
      checkLabel(decision, label);
      if (prob < 0) throw new DataValidationError(`target probability for ${pyRepr(label)} is negative: ${prob}`);
    }
    const rendering = renderer.render(decision);
    const labels = decision.labels;
    const T = rendering.choicePos;
    const K = labels.length;
    const targetTokens_TK = new Array<number>(T * K).fill(0);
    const weights_TK = new Array<number>(T * K).fill(0);
    labels.forEach((label, k) => {
      targetTokens_TK[(T - 1) * K + k] = rendering.labelTokens.get(label)!;
      weights_TK[(T - 1) * K + k] = Object.hasOwn(targetProbs, label) ? f32(targetProbs[label]) : 0;
    });
    return {
      model_input: modelInputFromInts(rendering.tokens.slice(0, T)),
      loss_fn_inputs: {
        target_tokens: { data: targetTokens_TK, dtype: 'int64', shape: [T, K] },
        weights: { data: weights_TK, dtype: 'float32', shape: [T, K] },
      },
    };
  });
}
