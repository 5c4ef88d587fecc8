// The judge of a judged suite's eval chunk, from the eval config's `judge` (absent: the evaluated
// model judges itself, on the eval's backend). Each sample's judge call is seeded by the sample's
// position, so a judge asked again (its record lost with a crashed attempt) samples the same reply.
import { ApplicationFailure } from '@temporalio/activity';
import type { EvalConfig } from '../cookbook/eval/benchmark-config.js';
import { exampleSeed } from '../cookbook/eval/benchmark-run.js';
import { JudgeConfigSchema, openAIJudge, openTinkerJudge, type Judge, type JudgeFor } from '../cookbook/eval/judge.js';
import { ConfigurationError } from '../cookbook/errors.js';
import { callBackend, type ActivityDeps } from './context.js';
import { ErrorTypes } from './types.js';

/** Keeps a sample's judge seed apart from its sampling seed. */
const JUDGE_SEED_PART = 7_919;

export async function evalJudge(deps: ActivityDeps, cfg: EvalConfig, evaluated: { baseModel: string; modelPath: string | null }): Promise<(index: number, sample: number) => Judge> {
  const judge = cfg.judge ?? JudgeConfigSchema.parse({});
  let judgeFor: JudgeFor;
  try {
    if (judge.api === 'openai') judgeFor = openAIJudge(judge);
    else {
      const backend = deps.backendFor(judge.base_url ?? cfg.base_url);
      judgeFor = await openTinkerJudge(judge, {
        openSession: (source) => callBackend(`open the judge's sampling session`, 'bad-path', () => backend.createSamplingSession(source)),
        baseModelOf: async (path) => (await callBackend(`weights_info of the judge ${path}`, 'bad-path', () => backend.weightsInfo(path))).base_model,
        evaluated: { ...evaluated, rendererName: cfg.renderer_name, tokenizerPath: cfg.tokenizer_path },
      });
    }
  } catch (err) {
    if (err instanceof ConfigurationError) throw ApplicationFailure.nonRetryable(err.message, ErrorTypes.config);
    throw err;
  }
  return (index, sample) => judgeFor(exampleSeed(cfg.seed, cfg.suite, index, sample, JUDGE_SEED_PART));
}
