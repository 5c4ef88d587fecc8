// Custom sampling evaluators (cookbook-spec §7.5) as activities: one activity per evaluator, run
// in parallel with the step's other evaluations on the pre-update sampler. Each example's seed
// comes from (run seed, step, evaluator, example), so a retried or replayed eval samples the same.
import { rendererForModel } from '../cookbook/renderers/for-model.js';
import { ApplicationFailure } from '@temporalio/activity';
import type { CustomSamplingEvaluatorConfig } from '../cookbook/eval/custom-sampling.js';
import { loadEvaluatorExamples, runCustomSamplingEvaluator } from '../cookbook/eval/custom-sampling.js';
import { deriveSeed } from '../cookbook/rl/seeds.js';
import type { RunRef } from '../cookbook/run-store.js';
import { callBackend, heartbeating, type ActivityDeps } from './context.js';
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
  evaluators: CustomSamplingEvaluatorConfig[];
}

/** Keeps custom-eval seeds apart from training and test-set rollout seeds. */
const CUSTOM_EVAL_SEED_MARKER = 1_000_033;

export interface CustomEvalInput {
  run: RunRef;
  step: number;
  samplerPath: string;
  /** Index into the config's `evaluators`. */
  index: number;
}

const evalData = runDataCache<EvaluatedConfig, Awaited<ReturnType<typeof buildEvalData>>>(
  (cfg) => [cfg.model_name, cfg.renderer_name, cfg.tokenizer_path, cfg.render_date, cfg.evaluators],
  buildEvalData,
);

async function buildEvalData(cfg: EvaluatedConfig) {
  const { renderer } = await rendererForModel(cfg);
  const examples = await Promise.all(cfg.evaluators.map((_, i) => loadEvaluatorExamples(cfg.evaluators, i)));
  return { renderer, examples };
}

export function evaluatorActivities(deps: ActivityDeps) {
  return {
    async customSamplingEval({ run, step, samplerPath, index }: CustomEvalInput): Promise<{ metrics: Record<string, number> }> {
      const { cfg, data } = evalData(run);
      const evaluator = cfg.evaluators[index];
      if (!evaluator) throw ApplicationFailure.nonRetryable(`the run has no evaluator ${index}`, ErrorTypes.config);
      const { renderer, examples } = await heartbeating(data);
      const backend = deps.backendFor(cfg.base_url);
      const sampler = await callBackend('create sampling session', 'bad-path', () => backend.createSamplingSession({ modelPath: samplerPath }));
      const metrics = await callBackend(`custom evaluator ${index} before step ${step}`, 'session-lost', () =>
        heartbeating(runCustomSamplingEvaluator(evaluator, examples[index], sampler, renderer, (example) => deriveSeed(cfg.seed, CUSTOM_EVAL_SEED_MARKER, step, index, example)), { step, evaluator: index }),
      );
      return { metrics };
    },
  };
}
