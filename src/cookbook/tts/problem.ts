// One problem of a TTS run, end to end (the reference's generate_cot_and_compute_tts): sample the
// CoT from the question's generation prompt, take the thinking out of the decoded response, score
// every step. The sampling seed comes from (run seed, problem index), so the same problem samples
// the same CoT on every attempt and worker.
import type { SamplingSession } from '../../backends/types.js';
import type { Renderer } from '../renderers/types.js';
import { deriveSeed } from '../rl/seeds.js';
import type { Tokenizer } from '../tokenizer.js';
import { problemSummary, pyPrefix, type ProblemOutcome } from './analysis.js';
import type { TtsProblem } from './problems.js';
import { modelCorrect, planCot, scorePlans, thinkingText, type StepScore } from './score.js';

/** Keeps TTS sampling seeds apart from training, rollout and benchmark seeds. */
const TTS_SEED_MARKER = 2_000_011;
export const cotSeed = (seed: number, problemIndex: number) => deriveSeed(seed, TTS_SEED_MARKER, problemIndex);

export interface ProblemRecord {
  problem_idx: number;
  question: string;
  answer: string;
  /** The decoded response, special tokens included (what the reference searches for <think>). */
  response: string;
  cot: string;
  steps: StepScore[];
  outcome: ProblemOutcome;
}

export interface ProblemScoring {
  sampler: SamplingSession;
  renderer: Renderer;
  tokenizer: Tokenizer;
  max_tokens: number;
  temperature: number;
  seed: number;
}

export async function scoreProblem(problem: TtsProblem, index: number, s: ProblemScoring): Promise<ProblemRecord> {
  const prompt = s.renderer.buildGenerationPrompt([{ role: 'user', content: problem.question }]);
  const res = await s.sampler.sample(prompt, 1, { max_tokens: s.max_tokens, temperature: s.temperature, stop: s.renderer.getStopSequences(), seed: cotSeed(s.seed, index) });
  const tokens = res.sequences[0]?.tokens;
  if (!tokens) throw new Error(`the sampler returned no sequence for problem ${index}`);
  const response = s.tokenizer.decode(tokens);
  const cot = thinkingText(response);
  const base = { problem_idx: index, question: problem.question, answer: problem.answer, response, cot };
  let plans;
  try {
    plans = planCot(cot, s.seed);
  } catch (err) {
    // The reference records a problem it cannot score and goes on with the others.
    const error = err instanceof Error ? err.message : String(err);
    return { ...base, steps: [], outcome: { question: pyPrefix(problem.question, 100), answer: problem.answer, error, problem_idx: index } };
  }
  const steps = await scorePlans(problem.question, problem.answer, plans, { renderer: s.renderer, tokenizer: s.tokenizer, computeLogprobs: (input) => s.sampler.computeLogprobs(input) });
  return { ...base, steps, outcome: problemSummary(problem.question, problem.answer, steps, modelCorrect(steps), index) };
}
