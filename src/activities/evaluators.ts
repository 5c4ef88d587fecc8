// Custom sampling evaluators (cookbook-spec §7.5) as activities: one activity per evaluator, run
// in parallel with the step's other evaluations on the pre-update sampler. Each example's seed
// comes from (run seed, step, evaluator, example), so a retried or replayed eval samples the same.
import { rendererForModel } from '../cookbook/renderers/for-model.js';
import { ApplicationFailure } from '@temporalio/activity';
import type { EvaluatorConfig } from '../cookbook/eval/custom-sampling.js';
import { benchmarkMetricPrefix, type BenchmarkEvaluatorConfig } from '../cookbook/eval/benchmark-config.js';
import { loadBenchmark, suiteNamed, type BenchmarkData } from '../cookbook/eval/benchmark-data.js';
import { aggregateResults, benchmarkSeeds, sampleAndGrade } from '../cookbook/eval/benchmark-run.js';
import { passAtKsOf } from '../cookbook/eval/pass-at-k.js';
import { skippedMetrics } from '../cookbook/eval/results.js';
import type { SamplingSession } from '../backends/types.js';
import type { Renderer } from '../cookbook/renderers/types.js';
import { loadEvaluatorExamples, runCustomSamplingEvaluator } from '../cookbook/eval/custom-sampling.js';
import { deriveSeed } from '../cookbook/rl/seeds.js';
import type { VlmClassifierEvaluatorConfig } from '../cookbook/supervised/vlm-classifier/config.js';
import { loadClassifierEvalSet, runClassifierEvaluator, type ClassifierEvalSet } from '../cookbook/supervised/vlm-classifier/evaluator.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import { runStoreOnce, type Once } from '../cookbook/rl/side-effects.js';
import type { Judge } from '../cookbook/eval/judge.js';
import { openJudge } from './eval-judge.js';
import { callBackend, heartbeating, samplingBackendOf, type ActivityDeps } from './context.js';
import { asEvaluator } from './timing.js';
import { runDataCache } from './run-data.js';
import { ErrorTypes } from './types.js';

/** What a run's config must hold for its evaluators to run. */
interface EvaluatedConfig {
  model_name: string;
  renderer_name: string | null;
  tokenizer_path: string | null;
  render_date: string | null;
  base_url: string | null;
  seed: number;
  evaluators: EvaluatorConfig[];
  /** SL's and DPO's infrequent evaluators (absent from other paradigms' configs). */
  infrequent_evaluators?: EvaluatorConfig[];
}

type EvaluatorSet = 'evaluators' | 'infrequent_evaluators';

/** Keeps custom-eval seeds apart from training and test-set rollout seeds (and the two sets apart). */
const CUSTOM_EVAL_SEED_MARKER = 1_000_033;
const INFREQUENT_EVAL_SEED_MARKER = 1_000_037;

export interface CustomEvalInput {
  run: RunRef;
  step: number;
  samplerPath: string;
  /** Index into the config's `evaluators` (or, with `set`, its `infrequent_evaluators`). */
  index: number;
  set?: EvaluatorSet;
}

const evalDataOf = (set: EvaluatorSet) =>
  runDataCache<EvaluatedConfig, Awaited<ReturnType<typeof buildEvalData>>>(
    (cfg) => [cfg.model_name, cfg.renderer_name, cfg.tokenizer_path, cfg.render_date, cfg[set]],
    (cfg) => buildEvalData(cfg, set),
  );
const evalData = { evaluators: evalDataOf('evaluators'), infrequent_evaluators: evalDataOf('infrequent_evaluators') };

async function buildEvalData(cfg: EvaluatedConfig, set: EvaluatorSet) {
  const { renderer } = await rendererForModel(cfg);
  const evaluators = cfg[set] ?? [];
  const examples = await Promise.all(
    evaluators.map((e, i) =>
      e.kind === 'benchmark' ? loadBenchmarkEvaluator(e, i, set) : e.kind === 'vlm_classifier' ? loadClassifierEvaluator(e, i, set) : loadEvaluatorExamples(evaluators as Array<{ file_path: string }>, i, set),
    ),
  );
  return { renderer, examples };
}

export function evaluatorActivities(deps: ActivityDeps) {
  return {
    customSamplingEval: ({ run, step, samplerPath, index, set = 'evaluators' }: CustomEvalInput): Promise<{ metrics: Record<string, number> }> => asEvaluator(run, async () => {
      const { cfg, data } = evalData[set](run);
      const evaluator = cfg[set]?.[index];
      if (!evaluator) throw ApplicationFailure.nonRetryable(`the run has no ${set} entry ${index}`, ErrorTypes.config);
      const { renderer, examples } = await heartbeating(data);
      const backend = samplingBackendOf(deps, cfg);
      const sampler = await callBackend('create sampling session', 'bad-path', () => backend.createSamplingSession({ modelPath: samplerPath }));
      const marker = set === 'evaluators' ? CUSTOM_EVAL_SEED_MARKER : INFREQUENT_EVAL_SEED_MARKER;
      const seedFor = (example: number) => deriveSeed(cfg.seed, marker, step, index, example);
      const evaluate = async () =>
        evaluator.kind === 'benchmark'
          ? runBenchmarkEvaluator(evaluator, examples[index] as BenchmarkData, sampler, renderer, cfg.seed, await benchmarkEffects(deps, { run, step, samplerPath, index, set }, cfg, evaluator))
          : evaluator.kind === 'vlm_classifier'
            ? runClassifierEvaluator(evaluator, examples[index] as ClassifierEvalSet, sampler, renderer, seedFor)
            : runCustomSamplingEvaluator(evaluator, examples[index] as Awaited<ReturnType<typeof loadEvaluatorExamples>>, sampler, renderer, seedFor);
      const metrics = await callBackend(`evaluator ${index} before step ${step}`, 'session-lost', () => heartbeating(evaluate(), { step, evaluator: index }));
      return { metrics };
    }),
  };
}

/** A `vlm_classifier` entry's labels (its images are decoded when first sampled); errors are named `<set>.<index>: …`. */
async function loadClassifierEvaluator(e: VlmClassifierEvaluatorConfig, index: number, set: EvaluatorSet): Promise<ClassifierEvalSet> {
  try {
    return await loadClassifierEvalSet(e, `${set}.${index}`);
  } catch (err) {
    throw new Error(`${set}.${index} (vlm_classifier): ${(err as Error).message}`);
  }
}

/** A `benchmark` entry's examples; errors are named `<set>.<index>: …`. */
async function loadBenchmarkEvaluator(e: BenchmarkEvaluatorConfig, index: number, set: EvaluatorSet): Promise<BenchmarkData> {
  try {
    return await loadBenchmark(e);
  } catch (err) {
    throw new Error(`${set}.${index} (${e.suite}): ${(err as Error).message}`);
  }
}

/**
 * A suite as an in-training evaluator, metrics `eval/<name>/…` as the reference's BenchmarkEvaluator.
 * Seeds come from (run seed, suite, example) and not the step, so every eval samples its examples
 * with the same seeds and the curve moves with the weights only (and equals `cookbook eval` of the
 * same snapshot with the same seed and sampling settings).
 */
async function runBenchmarkEvaluator(e: BenchmarkEvaluatorConfig, data: BenchmarkData, sampler: SamplingSession, renderer: Renderer, seed: number, effects: BenchmarkEffects): Promise<Record<string, number>> {
  const examples = data.items.map((item, index) => ({ index, item }));
  const results = await sampleAndGrade(data.suite, examples, sampler, renderer, e, benchmarkSeeds(seed, data.suite.name), effects.onceFor, effects.judgeFor);
  const prefix = benchmarkMetricPrefix(e);
  // Rows the port cannot check are out of the score; their count is logged beside it (eval/<name>/num_skipped).
  const metrics = { ...aggregateResults(data.suite, results, passAtKsOf(e)), ...skippedMetrics(data.skipped) };
  return Object.fromEntries(Object.entries(metrics).map(([k, v]) => [`${prefix}/${k}`, v]));
}

interface BenchmarkEffects {
  onceFor: (index: number, sample: number) => Once;
  judgeFor?: (index: number, sample: number) => Judge;
}

/**
 * Where a `benchmark` evaluator's grading effects (a judge's reply, a sandbox run) are recorded:
 * the run store's `side_effects/<set>_<evaluator>_<step>_<example>_<sample>/`, so a retried
 * evaluator activity reads them back rather than asking again. A judged suite's judge is the
 * entry's `judge` (absent: the sampler weights being evaluated), seeded as `cookbook eval` seeds it.
 */
async function benchmarkEffects(deps: ActivityDeps, at: { run: RunRef; step: number; samplerPath: string; index: number; set: EvaluatorSet }, cfg: EvaluatedConfig, e: BenchmarkEvaluatorConfig): Promise<BenchmarkEffects> {
  const store = new RunStore(at.run.logPath);
  const onceFor = (index: number, sample: number) => runStoreOnce(store, [at.set, at.index, at.step, index, sample]);
  if (!suiteNamed(e.suite).judged) return { onceFor };
  const judgeFor = await heartbeating(
    openJudge(deps, {
      judge: e.judge,
      base_url: cfg.base_url,
      evaluated: { baseModel: cfg.model_name, modelPath: at.samplerPath, rendererName: cfg.renderer_name, tokenizerPath: cfg.tokenizer_path },
      seed: cfg.seed,
      suite: e.suite,
    }),
  );
  return { onceFor, judgeFor };
}
