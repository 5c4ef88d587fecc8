// Sampling and grading benchmark examples, shared by the eval workflow's chunk activities and the
// in-training `benchmark` evaluator: one sample per example, its seed fixed by (run seed, suite,
// example index), the response's text (thinking stripped, as the reference's decode_response)
// graded by the suite.
import type { SamplingSession } from '../../backends/types.js';
import { getTextContent } from '../renderers/content.js';
import type { Renderer } from '../renderers/types.js';
import { deriveSeed } from '../rl/seeds.js';
import type { EvalItem, ExampleResult, Suite } from './suites/index.js';

export interface BenchmarkSampling {
  max_tokens: number;
  temperature: number;
}

/** A suite's name as a seed part (FNV-1a), so suites never share example seeds. */
export function suiteSeedPart(suite: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(suite)) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h;
}

/** Keeps benchmark seeds apart from training, rollout and custom-evaluator seeds. */
const BENCHMARK_SEED_MARKER = 2_000_003;

/** The sampling seed of example `index` of `suite`: the same on every attempt, worker and replay. */
export const exampleSeed = (seed: number, suite: string, index: number, ...more: number[]) => deriveSeed(seed, BENCHMARK_SEED_MARKER, suiteSeedPart(suite), index, ...more);

const promptText = (item: EvalItem) => getTextContent(item.messages[item.messages.length - 1]);

export async function sampleAndGrade(
  suite: Suite,
  examples: ReadonlyArray<{ index: number; item: EvalItem }>,
  sampler: SamplingSession,
  renderer: Renderer,
  sampling: BenchmarkSampling,
  seedFor: (index: number) => number,
): Promise<ExampleResult[]> {
  const stop = renderer.getStopSequences();
  return Promise.all(
    examples.map(async ({ index, item }) => {
      const prompt = renderer.buildGenerationPrompt(item.messages);
      const res = await sampler.sample(prompt, 1, { max_tokens: sampling.max_tokens, temperature: sampling.temperature, stop, seed: seedFor(index) });
      const tokens = res.sequences[0]?.tokens;
      if (!tokens) throw new Error(`the sampler returned no sequence for ${suite.name} example ${index}`);
      const response = getTextContent(renderer.parseResponse(tokens).message);
      const grade = suite.grade(response, item);
      return {
        index,
        id: item.id,
        ...(item.group !== undefined ? { group: item.group } : {}),
        prompt: promptText(item),
        response,
        expected: suite.expected(item),
        extracted: grade.extracted,
        correct: grade.correct,
        ...(grade.metrics ? { metrics: grade.metrics } : {}),
      };
    }),
  );
}

/** The reference's BenchmarkResult fields (score = share correct) plus the suite's own metrics. */
export function aggregateResults(suite: Suite, results: readonly ExampleResult[]): Record<string, number> {
  const correct = results.filter((r) => r.correct).length;
  return {
    score: results.length > 0 ? correct / results.length : 0,
    num_correct: correct,
    num_examples: results.length,
    ...(suite.aggregate?.(results) ?? {}),
  };
}
