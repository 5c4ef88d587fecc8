// Scores of a model's choice probabilities against held-out decisions: how often its most likely
// choice is the target's (first of equals, as torch.argmax), the probability it gives the
// targets, and the Brier score Σ (p − t)², each a mean over the decisions.
import { targetVector, type DecisionExample } from './data.js';
import { argmax } from './probability-loss.js';

export function scoreDecisions(examples: readonly DecisionExample[], probabilities: readonly number[][]): Record<string, number> {
  let correct = 0;
  let targetProb = 0;
  let brier = 0;
  examples.forEach((e, i) => {
    const p = probabilities[i];
    const t = targetVector(e);
    if (argmax(p) === argmax(t)) correct += 1;
    targetProb += p.reduce((s, x, k) => s + x * t[k], 0);
    brier += p.reduce((s, x, k) => s + (x - t[k]) ** 2, 0);
  });
  const n = examples.length;
  return { accuracy: correct / n, 'target_prob:mean': targetProb / n, brier: brier / n };
}
