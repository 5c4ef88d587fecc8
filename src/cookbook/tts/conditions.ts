// The four early-exit conditions of each step (the reference's compute_tts_for_step) and the
// confidence read from their logprobs (compute_early_exit_confidence). Perturbations draw from one
// generator per chain of thought, step after step, so the conditions of every step are fixed by the
// steps and the seed alone: they are planned up front and can be scored in any order.
import type { ModelInput } from '../../backends/types.js';
import { modelInputLength, textChunk } from '../model-input.js';
import { PythonRandom } from '../python-random.js';
import type { Renderer } from '../renderers/types.js';
import type { Tokenizer } from '../tokenizer.js';
import { hasNumbers, perturbNumbers } from './perturb.js';
import { isSelfVerificationStep } from './steps.js';

/**
 * S_x(c): x = 1 the step intact, 0 perturbed; c = 1 the steps before it intact, 0 perturbed.
 * In this order, the reference's.
 */
export const CONDITIONS = ['s1_c1', 's0_c1', 's1_c0', 's0_c0'] as const;
export type Condition = (typeof CONDITIONS)[number];

/**
 * The thinking closed and the answer opened in the boxed format, appended to the CoT prefix; the
 * answer and EARLY_EXIT_SUFFIX follow it (the reference's cue, not the paper's "The final result is").
 */
export const EARLY_EXIT_CUE = '\n</think>\n\nThe answer is \\boxed{';
export const EARLY_EXIT_SUFFIX = '}';

/** The reference clamps the answer's summed logprob here before exp(). */
export const MIN_ANSWER_LOGPROB = -50.0;

export interface StepPlan {
  index: number;
  text: string;
  /** The CoT prefix of each condition: the context's steps and this step, joined by "\n". */
  prefixes: Record<Condition, string>;
  isSelfVerification: boolean;
}

const joinPresent = (context: string, step: string) => [context, step].filter((p) => p !== '').join('\n');

/**
 * Every step's conditions. The context is perturbed by numbers only (a step without numbers stays
 * as it is); the step itself has its numbers perturbed, or is dropped when it has none.
 */
export function planSteps(steps: readonly string[], seed: number): StepPlan[] {
  const rng = new PythonRandom(seed);
  return steps.map((step, index) => {
    const preceding = steps.slice(0, index);
    const intactContext = preceding.join('\n');
    const perturbedContext = preceding.map((s) => perturbNumbers(s, rng)).join('\n');
    const perturbedStep = hasNumbers(step) ? perturbNumbers(step, rng) : '';
    return {
      index,
      text: step,
      prefixes: {
        s1_c1: joinPresent(intactContext, step),
        s0_c1: joinPresent(intactContext, perturbedStep),
        s1_c0: joinPresent(perturbedContext, step),
        s0_c0: joinPresent(perturbedContext, perturbedStep),
      },
      isSelfVerification: isSelfVerificationStep(step),
    };
  });
}

export interface EarlyExitInput {
  input: ModelInput;
  /** Where the answer's tokens start in `input`. */
  answerStart: number;
  answerTokens: number;
}

/** The question's generation prompt, then the CoT prefix and the cue, then the answer and "}"; null when the answer has no tokens. */
export function earlyExitInput(renderer: Renderer, tokenizer: Tokenizer, question: string, cotPrefix: string, answer: string): EarlyExitInput | null {
  const base = renderer.buildGenerationPrompt([{ role: 'user', content: question }]);
  const prefixTokens = tokenizer.encode(cotPrefix + EARLY_EXIT_CUE, { addSpecialTokens: false });
  const answerTokens = tokenizer.encode(answer + EARLY_EXIT_SUFFIX, { addSpecialTokens: false });
  if (answerTokens.length === 0) return null;
  const withPrefix: ModelInput = { chunks: [...base.chunks, textChunk(prefixTokens)] };
  return { input: { chunks: [...withPrefix.chunks, textChunk(answerTokens)] }, answerStart: modelInputLength(withPrefix), answerTokens: answerTokens.length };
}

/**
 * exp(sum of the answer's logprobs), the sum clamped at -50. The positions summed are the
 * reference's, `logprobs[answerStart - 1 : answerStart - 1 + answerTokens]`: its comment reads
 * compute_logprobs as shifted by one, but entry i is the logprob of token i, so the reference (and
 * this port, number for number) scores the cue's last token and all the answer's tokens but its last.
 */
export function confidenceFromLogprobs(logprobs: ReadonlyArray<number | null>, answerStart: number, answerTokens: number): number {
  const scored = logprobs.slice(answerStart - 1, answerStart - 1 + answerTokens);
  if (scored.length === 0) return 0.0;
  let total = 0;
  for (const lp of scored) if (lp !== null) total += lp;
  return Math.exp(Math.max(total, MIN_ANSWER_LOGPROB));
}

/** TTS = ½ (|S1(1) − S0(1)| + |S1(0) − S0(0)|), in float64 as the reference's Python floats. */
export const ttsOf = (s: Record<Condition, number>): number => 0.5 * (Math.abs(s.s1_c1 - s.s0_c1) + Math.abs(s.s1_c0 - s.s0_c0));
