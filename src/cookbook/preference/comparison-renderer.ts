// The reference's ComparisonRendererFromChatRenderer (preference/types.py): a comparison becomes one
// conversation — the prompt, then each completion after a system marker, then a "Preference"
// marker — and the label is the assistant's answer. A reward model is trained on that answer's
// first token only (the example is cut right after the first weighted token) and asked for it with
// the generation prompt.

import type { ModelInput } from '../../backends/types.js';
import { DataFormatError } from '../errors.js';
import { modelInputFromInts, modelInputToInts } from '../model-input.js';
import type { Message, Renderer } from '../renderers/types.js';
import type { Comparison, LabeledComparison } from './comparisons.js';

export const COMPLETION_A_MARKER = '==== Completion A ====';
export const COMPLETION_B_MARKER = '==== Completion B ====';
export const PREFERENCE_MARKER = '==== Preference ====';

export function comparisonToConversation(comparison: Comparison): Message[] {
  return [
    ...comparison.prompt_conversation,
    { role: 'system', content: COMPLETION_A_MARKER },
    ...comparison.completion_A,
    { role: 'system', content: COMPLETION_B_MARKER },
    ...comparison.completion_B,
    { role: 'system', content: PREFERENCE_MARKER },
  ];
}

/** The prompt a reward model answers "A", "B" or "Tie" to. */
export function comparisonGenerationPrompt(renderer: Renderer, comparison: Comparison): ModelInput {
  return renderer.buildGenerationPrompt(comparisonToConversation(comparison));
}

/**
 * Tokens and weights of a labeled comparison (the default LAST_ASSISTANT_MESSAGE weighting), cut
 * after the first token of weight 1; with no such token they are returned whole, as the reference.
 */
export function comparisonModelInputWeights(renderer: Renderer, lc: LabeledComparison): { modelInput: ModelInput; weights: number[] } {
  const convo: Message[] = [...comparisonToConversation(lc.comparison), { role: 'assistant', content: lc.label }];
  const { modelInput, weights } = renderer.buildSupervisedExample(convo);
  if (modelInput.chunks.some((c) => c.type !== 'encoded_text')) {
    throw new DataFormatError('Preference learning currently only supports text-only content.');
  }
  const first = weights.findIndex((w) => w === 1);
  if (first < 0) return { modelInput, weights: [...weights] };
  return { modelInput: modelInputFromInts(modelInputToInts(modelInput).slice(0, first + 1)), weights: weights.slice(0, first + 1) };
}
