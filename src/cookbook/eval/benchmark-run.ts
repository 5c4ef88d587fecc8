// Sampling and grading benchmark examples, shared by the eval workflow's chunk activities and the
// in-training `benchmark` evaluator: num_samples samples per example, each seed fixed by (run seed,
// suite, example index, sample index), each response's text (thinking stripped, as the reference's
// decode_response) graded by the suite; with several samples, pass@k over them.
import type { SamplingSession } from '../../backends/types.js';
import { getTextContent } from '../renderers/content.js';
import type { Renderer } from '../renderers/types.js';
import { deriveSeed } from '../rl/seeds.js';
import { meanPassAtK } from './pass-at-k.js';
import { actAlways, type Once } from '../rl/side-effects.js';
import type { Judge } from './judge.js';
import type { EvalItem, ExampleResult, SampleResult, Suite } from './suites/index.js';

export interface BenchmarkSampling {
  max_tokens: number;
  temperature: number;
  num_samples: number;
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

/**
 * The seed of sample `sample` of example `index`. Sample 0 keeps the one-sample seed, so an eval
 * with num_samples > 1 extends the num_samples = 1 eval of the same seed rather than replacing it.
 */
export const benchmarkSeeds = (seed: number, suite: string) => (index: number, sample: number) =>
  sample === 0 ? exampleSeed(seed, suite, index) : exampleSeed(seed, suite, index, sample);

const promptText = (item: EvalItem) => getTextContent(item.messages[item.messages.length - 1]);

export async function sampleAndGrade(
  suite: Suite,
  examples: ReadonlyArray<{ index: number; item: EvalItem }>,
  sampler: SamplingSession,
  renderer: Renderer,
  sampling: BenchmarkSampling,
  seedFor: (index: number, sample: number) => number,
  /** Where a sample's grading effects are recorded (default: nowhere, they act every time). */
  onceFor: (index: number, sample: number) => Once = () => actAlways,
  /** A judged suite's judge of a sample (absent: the suite is not judged). */
  judgeFor?: (index: number, sample: number) => Judge,
): Promise<ExampleResult[]> {
  const stop = renderer.getStopSequences();
  const sampleOne = async (index: number, item: EvalItem, prompt: ReturnType<Renderer['buildGenerationPrompt']>, sample: number): Promise<SampleResult> => {
    const res = await sampler.sample(prompt, 1, { max_tokens: sampling.max_tokens, temperature: sampling.temperature, stop, seed: seedFor(index, sample) });
    const tokens = res.sequences[0]?.tokens;
    if (!tokens) throw new Error(`the sampler returned no sequence for ${suite.name} example ${index} (sample ${sample})`);
    const { message } = renderer.parseResponse(tokens);
    const response = getTextContent(message);
    const grade = await suite.grade(response, item, { message, once: onceFor(index, sample), ...(judgeFor ? { judge: judgeFor(index, sample) } : {}) });
    return { response, extracted: grade.extracted, correct: grade.correct, ...(grade.metrics ? { metrics: grade.metrics } : {}) };
  };
  return Promise.all(
    examples.map(async ({ index, item }) => {
      const prompt = renderer.buildGenerationPrompt(item.messages);
      // One request per sample, each with its own seed: a sample never depends on how many others were asked for.
      const samples = await Promise.all(Array.from({ length: sampling.num_samples }, (_, s) => sampleOne(index, item, prompt, s)));
      const first = samples[0]!;
      return {
        index,
        id: item.id,
        ...(item.group !== undefined ? { group: item.group } : {}),
        prompt: promptText(item),
        response: first.response,
        expected: suite.expected(item),
        extracted: first.extracted,
        correct: first.correct,
        ...(first.metrics ? { metrics: first.metrics } : {}),
        ...(samples.length > 1 ? { samples } : {}),
      };
    }),
  );
}

/** Every graded sample as an example result of its own: what score and the suite's metrics average over. */
function perSample(results: readonly ExampleResult[]): ExampleResult[] {
  return results.flatMap(({ samples, ...r }) => (samples ? samples.map(({ metrics, ...s }) => ({ ...r, metrics, ...s })) : [r]));
}

/** An example's share of correct samples (its one sample's verdict, with one). */
const exampleScore = (r: ExampleResult) => (r.samples ? r.samples.filter((s) => s.correct).length / r.samples.length : Number(r.correct));

/**
 * The score's standard error with examples as the unit (samples of one example are not
 * independent): the sample standard deviation of the examples' scores over √n; none below two
 * examples. With one sample each it is the binomial √(p(1−p)/(n−1)).
 */
export function scoreStderr(results: readonly ExampleResult[]): Record<string, number> {
  const n = results.length;
  if (n < 2) return {};
  const scores = results.map(exampleScore);
  const mean = scores.reduce((a, b) => a + b, 0) / n;
  const variance = scores.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1);
  return { score_stderr: Math.sqrt(variance / n) };
}

/**
 * The reference's BenchmarkResult fields plus the suite's own metrics, over every sample (as the
 * reference aggregates all samples' rewards): score = share of samples correct, num_correct =
 * correct samples, num_examples = examples; `score_stderr` (not in the reference); with several
 * samples, `num_samples` (all samples) and `pass@<k>` for each k in `passAtKs`, averaged over examples.
 */
export function aggregateResults(suite: Suite, results: readonly ExampleResult[], passAtKs: readonly number[] = []): Record<string, number> {
  const samples = perSample(results);
  const correct = samples.filter((r) => r.correct).length;
  const multi = samples.length !== results.length;
  return {
    score: samples.length > 0 ? correct / samples.length : 0,
    num_correct: correct,
    num_examples: results.length,
    ...(multi ? { num_samples: samples.length } : {}),
    ...scoreStderr(results),
    ...meanPassAtK(results.map((r) => ({ n: r.samples?.length ?? 1, correct: r.samples ? r.samples.filter((s) => s.correct).length : Number(r.correct) })), passAtKs),
    ...(suite.aggregate?.(samples) ?? {}),
  };
}
