// The search_tool recipe's offline eval (reference 0.6.1 recipes/search_tool/offline_eval.py): up
// to `maxEvalSamples` questions per data source, one rollout each with the training env's tool and
// grading (5 turns, format_coef 0.1), and per source the accuracy of the last turn's `correct`.
import type { Renderer } from '../../renderers/types.js';
import type { TokenCompleter } from '../completers.js';
import { doSingleRollout } from '../rollouts.js';
import { buildSearchEnv, sampleEachSource, type SearchCorpus, type SearchDatum } from './search-tool.js';

export interface SourceAccuracy {
  total_samples: number;
  total_correct: number;
  accuracy: number;
}

export interface SearchOfflineEvalOptions {
  maxEvalSamples?: number;
  seed?: number;
  maxTrajectoryTokens?: number | null;
  nResults?: number;
}

export async function searchOfflineEval(
  policy: TokenCompleter,
  renderer: Renderer,
  corpus: SearchCorpus,
  data: readonly SearchDatum[],
  opts: SearchOfflineEvalOptions = {},
): Promise<Record<string, SourceAccuracy>> {
  const sample = sampleEachSource(data, opts.maxEvalSamples ?? 100, opts.seed ?? 42);
  const envOpts = { maxTurns: 5, formatCoef: 0.1, maxTrajectoryTokens: opts.maxTrajectoryTokens === undefined ? 32 * 1024 : opts.maxTrajectoryTokens, maxGenerationTokens: null, contextOverflowReward: -0.1, nResults: opts.nResults ?? 3 };
  const scores = await Promise.all(
    sample.map(async (datum) => {
      const trajectory = await doSingleRollout(policy, buildSearchEnv(renderer, corpus, datum, envOpts));
      return { source: datum.data_source, correct: trajectory.transitions.at(-1)?.metrics.correct ?? 0 };
    }),
  );
  const out: Record<string, SourceAccuracy> = {};
  for (const { source, correct } of scores) {
    const acc = (out[source] ??= { total_samples: 0, total_correct: 0, accuracy: 0 });
    acc.total_samples += 1;
    acc.total_correct += correct;
  }
  for (const acc of Object.values(out)) acc.accuracy = acc.total_correct / acc.total_samples;
  return out;
}
