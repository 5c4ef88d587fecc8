// Custom sampling evaluators (cookbook-spec §7.5, the reference's `CustomEvaluator`): sample one
// response per example from a sampler, grade its text against the example's target, report
// accuracy. The reference takes a Python grader function; a serialisable config names one of the
// graders below instead, and reads its examples from a JSONL file of {"input", "output"} rows.
import { z } from 'zod';
import type { SamplingSession } from '../../backends/types.js';
import { DataFormatError } from '../errors.js';
import { parseJsonlRows, readTextFile } from '../jsonl.js';
import { getTextContent } from '../renderers/content.js';
import type { Renderer } from '../renderers/types.js';
import { extractBoxed, safeGrade } from '../rl/grading.js';
import { scienceCorrect, tooluseCorrectFromTarget } from '../distillation/sdft-eval.js';
import { BenchmarkEvaluatorSchema, benchmarkMetricPrefix } from './benchmark-config.js';
import { loadBenchmark } from './benchmark-data.js';
import { VlmClassifierEvaluatorSchema } from '../supervised/vlm-classifier/config.js';
import { classifierMetricKey, loadClassifierEvalSet } from '../supervised/vlm-classifier/evaluator.js';

export const GRADERS = {
  /** The reference's example grader: the target appears in the response, ignoring case. */
  contains: (response: string, target: string) => response.toLowerCase().includes(target.toLowerCase()),
  exact: (response: string, target: string) => response.trim() === target.trim(),
  /** Math equivalence (§3.3) of the last `\boxed{…}` answer, or of the whole response without one. */
  math: (response: string, target: string) => safeGrade(boxedOrWhole(response), target),
  /** SDFT's science eval (recipes/sdft/eval.py): the extracted answer letter equals the target. */
  sdft_science: scienceCorrect,
  /** SDFT's tool-use eval: Actions and merged Action Inputs equal the target's JSON list of {Action, Action_Input}. */
  sdft_tooluse: tooluseCorrectFromTarget,
} as const satisfies Record<string, (response: string, target: string) => boolean>;

export type GraderName = keyof typeof GRADERS;

function boxedOrWhole(response: string): string {
  try {
    return extractBoxed(response);
  } catch {
    return response.trim();
  }
}

export const CustomSamplingEvaluatorSchema = z.strictObject({
  kind: z.literal('custom_sampling'),
  /** JSONL, one {"input": str, "output": str} per line (relative to the config file). */
  file_path: z.string().min(1),
  grader: z.enum(Object.keys(GRADERS) as [GraderName, ...GraderName[]]).default('contains'),
  /** Metrics are `<name>/accuracy`; without a name, `accuracy` as in the reference. */
  name: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, "_", "." and "-"')
    .nullable()
    .default(null),
  max_tokens: z.int().positive().default(100),
  temperature: z.number().nonnegative().default(0.7),
  top_p: z.number().gt(0).max(1).default(1.0),
});

export type CustomSamplingEvaluatorConfig = z.output<typeof CustomSamplingEvaluatorSchema>;

/**
 * An evaluator entry: a custom sampling evaluator, a benchmark suite (benchmark-config.ts), or the
 * VLM classifier recipe's accuracy (supervised/vlm-classifier/evaluator.ts).
 */
export const EvaluatorSchema = z.discriminatedUnion('kind', [CustomSamplingEvaluatorSchema, BenchmarkEvaluatorSchema, VlmClassifierEvaluatorSchema]);
export type EvaluatorConfig = z.output<typeof EvaluatorSchema>;

/** The metric key an entry's accuracy is reported under (distinct entries must not share one). */
const reportedKey = (e: EvaluatorConfig) => (e.kind === 'benchmark' ? `${benchmarkMetricPrefix(e)}/score` : e.kind === 'vlm_classifier' ? classifierMetricKey(e) : metricKey(e));

export const EvaluatorsSchema = z
  .array(EvaluatorSchema)
  .default([])
  .superRefine((evaluators, ctx) => {
    const seen = new Map<string, number>();
    evaluators.forEach((e, i) => {
      const key = reportedKey(e);
      if (seen.has(key)) {
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `evaluators ${seen.get(key)} and ${i} would both report ${key}; give them distinct names` });
      }
      seen.set(key, i);
    });
  });

export const metricKey = (e: Pick<CustomSamplingEvaluatorConfig, 'name'>) => (e.name ? `${e.name}/accuracy` : 'accuracy');

export interface EvalExample {
  input: string;
  output: string;
}

export async function loadEvalExamples(filePath: string, displayPath = filePath): Promise<EvalExample[]> {
  const text = await readTextFile(filePath, displayPath);
  return parseJsonlRows(
    text,
    displayPath,
    (data, at) => {
      const row = data as Record<string, unknown> | null;
      if (typeof row !== 'object' || row === null || Array.isArray(row)) throw new DataFormatError(`${at}: expected an object with "input" and "output"`);
      for (const key of ['input', 'output']) {
        if (typeof row[key] !== 'string') throw new DataFormatError(`${at}: "${key}" must be a string`);
      }
      return { input: row.input as string, output: row.output as string };
    },
    { emptyMessage: `${displayPath}: no evaluation examples` },
  );
}

/** The examples of a config's evaluator `index`; errors are named `<key>.<index>.file_path: …` (key: `evaluators`, or SL's `infrequent_evaluators`). */
export async function loadEvaluatorExamples(evaluators: Array<{ file_path: string }>, index: number, key = 'evaluators'): Promise<EvalExample[]> {
  try {
    return await loadEvalExamples(evaluators[index].file_path);
  } catch (err) {
    throw new DataFormatError(`${key}.${index}.file_path: ${(err as Error).message}`);
  }
}

/** Loads an entry's data as its first eval will (a custom file, or a benchmark suite's rows); errors name `<key>.<index>`. */
export async function checkEvaluatorData(evaluators: EvaluatorConfig[], index: number, key = 'evaluators'): Promise<void> {
  const e = evaluators[index];
  if (e.kind === 'vlm_classifier') {
    try {
      await loadClassifierEvalSet(e, `${key}.${index}`);
    } catch (err) {
      throw new DataFormatError(`${key}.${index} (vlm_classifier): ${(err as Error).message}`);
    }
    return;
  }
  if (e.kind !== 'benchmark') {
    await loadEvaluatorExamples(evaluators as CustomSamplingEvaluatorConfig[], index, key);
    return;
  }
  try {
    await loadBenchmark(e);
  } catch (err) {
    throw new DataFormatError(`${key}.${index} (benchmark ${e.suite}): ${(err as Error).message}`);
  }
}

/**
 * Accuracy of one response per example. Examples are sampled concurrently (the reference samples
 * them one by one; the verdicts do not depend on the order, the seeds fix each sample).
 */
export async function runCustomSamplingEvaluator(
  evaluator: CustomSamplingEvaluatorConfig,
  examples: EvalExample[],
  sampler: SamplingSession,
  renderer: Renderer,
  seedFor: (example: number) => number,
): Promise<Record<string, number>> {
  const grade = GRADERS[evaluator.grader];
  const stop = renderer.getStopSequences();
  const verdicts = await Promise.all(
    examples.map(async (example, i) => {
      const prompt = renderer.buildGenerationPrompt([{ role: 'user', content: example.input }]);
      const res = await sampler.sample(prompt, 1, { max_tokens: evaluator.max_tokens, temperature: evaluator.temperature, top_p: evaluator.top_p, stop, seed: seedFor(i) });
      const tokens = res.sequences[0]?.tokens;
      if (!tokens) throw new Error('sampler returned no sequences');
      return grade(getTextContent(renderer.parseResponse(tokens).message), example.output);
    }),
  );
  const correct = verdicts.filter(Boolean).length;
  return { [metricKey(evaluator)]: examples.length > 0 ? correct / examples.length : 0.0 };
}
