// Scoring one chain of thought: every step's four conditions through a sampler's compute_logprobs
// (compute_tts_for_cot). Identical prefixes within one CoT (a step without numbers after a context
// without numbers has S_x(0) = S_x(1)) are scored once; the reference asks for each, and a sampler
// gives the same logprobs for the same tokens.
import type { ModelInput } from '../../backends/types.js';
import type { Renderer } from '../renderers/types.js';
import type { Tokenizer } from '../tokenizer.js';
import { CONDITIONS, confidenceFromLogprobs, earlyExitInput, planSteps, ttsOf, type Condition, type StepPlan } from './conditions.js';
import { pyStripWs as pyStrip } from '../renderers/py-whitespace.js';
import { segmentCotSteps } from './steps.js';

export interface StepScore {
  step_index: number;
  step_text: string;
  tts: number;
  s1_c1: number;
  s0_c1: number;
  s1_c0: number;
  s0_c0: number;
  is_self_verification: boolean;
}

export type ComputeLogprobs = (input: ModelInput) => Promise<Array<number | null>>;

export interface CotScoring {
  renderer: Renderer;
  tokenizer: Tokenizer;
  computeLogprobs: ComputeLogprobs;
}

/** Every step's conditions (may throw, as the reference does, on a number too large for int()). */
export const planCot = (cotText: string, seed: number): StepPlan[] => planSteps(segmentCotSteps(cotText), seed);

/** Every planned step's TTS (compute_tts_for_cot without its correctness check: see modelCorrect). */
export async function scorePlans(question: string, answer: string, plans: readonly StepPlan[], s: CotScoring): Promise<StepScore[]> {
  const confidences = new Map<string, Promise<number>>();
  const confidence = (prefix: string): Promise<number> => {
    let c = confidences.get(prefix);
    if (!c) {
      const input = earlyExitInput(s.renderer, s.tokenizer, question, prefix, answer);
      c = input ? s.computeLogprobs(input.input).then((lps) => confidenceFromLogprobs(lps, input.answerStart, input.answerTokens)) : Promise.resolve(0.0);
      confidences.set(prefix, c);
    }
    return c;
  };
  return Promise.all(
    plans.map(async (plan) => {
      const values = await Promise.all(CONDITIONS.map((c) => confidence(plan.prefixes[c])));
      const s = Object.fromEntries(CONDITIONS.map((c, i) => [c, values[i]])) as Record<Condition, number>;
      return { step_index: plan.index, step_text: plan.text, tts: ttsOf(s), ...s, is_self_verification: plan.isSelfVerification };
    }),
  );
}

/** The reference's verdict: the model puts more than half its mass on the answer after the whole intact CoT. */
export const modelCorrect = (steps: readonly StepScore[]): boolean => (steps.length > 0 ? steps[steps.length - 1].s1_c1 > 0.5 : false);

/**
 * The thinking inside the first <think>…</think> of the decoded response, stripped; without one,
 * the whole response (the reference's generate_cot_and_compute_tts). A renderer whose generation
 * prompt already opens <think> leaves no opening tag in the response, so the whole response is the CoT there too.
 */
export function thinkingText(response: string): string {
  const m = /<think>([\s\S]*?)<\/think>/.exec(response);
  return m ? pyStrip(m[1]) : response;
}
