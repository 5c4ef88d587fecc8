// A conversation row may carry the exact tokens to train on: `"tokens"` (token ids, the whole
// sequence) and `"weights"` (one per token, what is trained on, as a renderer's supervised example
// sets them: 1 on the model's own output, 0 on the prompt). Rows exported from a capture store
// (`cookbook capture export --format sft`) are of this form, so training sees what sampling saw:
// the datum is built from these tokens rather than from re-rendering `messages`, which stay as the
// readable view (and for train_on_what's check that there is an assistant message).
import { DataFormatError } from '../errors.js';

export interface TokenRecord {
  tokens: number[];
  weights: number[];
}

const isTokenId = (t: unknown) => Number.isSafeInteger(t) && (t as number) >= 0;
const isWeight = (w: unknown) => typeof w === 'number' && Number.isFinite(w) && w >= 0;

/** The row's tokens and weights, or undefined when it has neither; `at` is "file:line". */
export function tokenRecordOf(obj: Record<string, unknown>, at: string): TokenRecord | undefined {
  const hasTokens = 'tokens' in obj;
  const hasWeights = 'weights' in obj;
  if (!hasTokens && !hasWeights) return undefined;
  if (!hasTokens || !hasWeights) throw new DataFormatError(`${at}: "tokens" and "weights" go together (this row has only "${hasTokens ? 'tokens' : 'weights'}")`);
  const { tokens, weights } = obj;
  if (!Array.isArray(tokens) || !tokens.every(isTokenId)) throw new DataFormatError(`${at}: "tokens" must be a list of token ids (non-negative integers)`);
  if (!Array.isArray(weights) || !weights.every(isWeight)) throw new DataFormatError(`${at}: "weights" must be a list of non-negative numbers`);
  if (tokens.length !== weights.length) throw new DataFormatError(`${at}: ${tokens.length} tokens but ${weights.length} weights (one weight per token)`);
  if (tokens.length < 2) throw new DataFormatError(`${at}: "tokens" needs at least 2 tokens (an input and a target)`);
  if (!weights.some((w) => w > 0)) throw new DataFormatError(`${at}: every weight is 0, so nothing would be trained on`);
  return { tokens: tokens as number[], weights: weights as number[] };
}
