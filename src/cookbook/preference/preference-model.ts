// The reference's PreferenceModelFromChatRenderer (preference/types.py): render a comparison with
// the generation prompt, sample one token at temperature 0 from the reward model's sampler weights
// and read it as "A" (−1: A preferred), "B" (1) or "Tie" (0); anything else warns and scores 0.

import type { SampleResponse, SamplingParams, ModelInput } from '../../backends/types.js';
import type { Renderer } from '../renderers/types.js';
import type { Tokenizer } from '../tokenizer.js';
import { comparisonGenerationPrompt } from './comparison-renderer.js';
import type { Comparison } from './comparisons.js';

/** Scores a comparison in [−1, 1]: −1 means A is preferred, 1 means B, 0 a tie. */
export interface PreferenceModel {
  score(comparison: Comparison): Promise<number>;
}

/** What the preference model samples from (a SamplingSession satisfies it). */
export interface PreferenceSampler {
  sample(prompt: ModelInput, numSamples: number, params: SamplingParams): Promise<SampleResponse>;
}

/** The reference's mapping of the decoded, stripped token to a score; null for anything else. */
export function preferenceScore(output: string): number | null {
  if (output === 'A') return -1.0;
  if (output === 'B') return 1.0;
  if (output === 'Tie') return 0.0;
  return null;
}

export class PreferenceModelFromChatRenderer implements PreferenceModel {
  constructor(
    private readonly renderer: Renderer,
    private readonly tokenizer: Tokenizer,
    private readonly sampler: PreferenceSampler,
    /** Sampling seed of each call, in call order (greedy sampling ignores it; it keeps requests identical on replay). */
    private readonly seedFor: () => number,
    private readonly warn: (message: string) => void = (m) => console.warn(m),
  ) {}

  async score(comparison: Comparison): Promise<number> {
    const prompt = comparisonGenerationPrompt(this.renderer, comparison);
    const response = await this.sampler.sample(prompt, 1, { temperature: 0, max_tokens: 1, seed: this.seedFor() });
    const seq = response.sequences[0];
    if (!seq) throw new Error('the reward model sampler returned no sequences');
    const output = this.tokenizer.decode(seq.tokens).trim();
    const score = preferenceScore(output);
    if (score === null) {
      this.warn(`Invalid output preference model output: '${output}'`);
      return 0.0;
    }
    return score;
  }
}
