// The judge of a judged suite, from a `judge` config (absent: the evaluated model judges itself, on
// the evaluated model's backend): for `cookbook eval`'s chunks and for the in-training `benchmark`
// evaluator alike. Each sample's judge call is seeded by the sample's position, so a judge asked
// again (its record lost with a crashed attempt) samples the same reply.
import { ApplicationFailure } from '@temporalio/activity';
import type { EvalConfig } from '../cookbook/eval/benchmark-config.js';
import { exampleSeed } from '../cookbook/eval/benchmark-run.js';
import { JudgeConfigSchema, openAIJudge, openTinkerJudge, type Judge, type JudgeConfig, type JudgeFor } from '../cookbook/eval/judge.js';
import { ConfigurationError } from '../cookbook/errors.js';
import { callBackend, type ActivityDeps } from './context.js';
import { ErrorTypes } from './types.js';

/** Keeps a sample's judge seed apart from its sampling seed. */
const JUDGE_SEED_PART = 7_919;

export interface JudgeSetup {
  judge: JudgeConfig | undefined;
  /** The backend a tinker judge without its own base_url runs on: the evaluated model's. */
  base_url: string | null;
  /** The evaluated model (a base model, or sampler weights on it), which judges when judge.model is null. */
  evaluated: { baseModel: string; modelPath: string | null; rendererName: string | null; tokenizerPath: string | null };
  /** The seeds of the samples being judged: (seed, suite, example, sample). */
  seed: number;
  suite: string;
}

/** A judge per (example, sample); a judge config that cannot work is a non-retryable ConfigError. */
export async function openJudge(deps: ActivityDeps, s: JudgeSetup): Promise<(index: number, sample: number) => Judge> {
  const judge = s.judge ?? JudgeConfigSchema.parse({});
  let judgeFor: JudgeFor;
  try {
    if (judge.api === 'openai') judgeFor = openAIJudge(judge);
    else {
      const backend = deps.backendFor(judge.base_url ?? s.base_url);
      judgeFor = await openTinkerJudge(judge, {
        openSession: (source) => callBackend(`open the judge's sampling session`, 'bad-path', () => backend.createSamplingSession(source)),
        baseModelOf: async (path) => (await callBackend(`weights_info of the judge ${path}`, 'bad-path', () => backend.weightsInfo(path))).base_model,
        evaluated: s.evaluated,
      });
    }
  } catch (err) {
    if (err instanceof ConfigurationError) throw ApplicationFailure.nonRetryable(err.message, ErrorTypes.config);
    throw err;
  }
  return (index, sample) => judgeFor(exampleSeed(s.seed, s.suite, index, sample, JUDGE_SEED_PART));
}

/** The judge of a `cookbook eval` chunk. */
export function evalJudge(deps: ActivityDeps, cfg: EvalConfig, evaluated: { baseModel: string; modelPath: string | null }): Promise<(index: number, sample: number) => Judge> {
  return openJudge(deps, {
    judge: cfg.judge,
    base_url: cfg.base_url,
    evaluated: { ...evaluated, rendererName: cfg.renderer_name, tokenizerPath: cfg.tokenizer_path },
    seed: cfg.seed,
    suite: cfg.suite,
  });
}
