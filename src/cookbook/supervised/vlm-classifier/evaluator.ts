// The reference's ClassifierEvaluator (recipes/vlm_classifier/eval.py) as an `evaluators` entry of
// kind `vlm_classifier`: the split shuffled with seed 0 (HF `shuffle(seed=0)`), its first `n_eval`
// examples each asked the question with the answer prefix prefilled, one greedy sample each (at
// most `max_parallel_tasks` at once), the class read from the reply after its last ':', and the
// share of exact matches with the cleaned class name reported as `accuracy`.

import type { ModelInput, SamplingSession } from '../../../backends/types.js';
import { getTextContent } from '../../renderers/content.js';
import type { Renderer } from '../../renderers/types.js';
import { numpyPermutation } from '../../shuffle.js';
import { HfSourceSchema } from '../../hf/config.js';
import type { VlmClassifierEvaluatorConfig } from './config.js';
import { ANSWER_PREFIX, classifierPrompt, cleanClassName, predictedClassName } from './data.js';
import { classifierColumns, namedClassifierSource } from './dataset.js';
import { prepareImage, rowImageBytes } from './images.js';
import { loadClassifierSplit, rowClassName, type ClassifierRow, type SourceOptions } from './source.js';

/** Prompts of at most this many examples are kept between evals; larger sets decode each time. */
const CACHED_PROMPTS = 1024;

export interface ClassifierEvalSet {
  examples: Array<{ row: ClassifierRow; className: string }>;
  /** The generation prompt of example `i` (its image decoded on first use). */
  prompt(i: number, renderer: Renderer): Promise<ModelInput>;
}

/** The evaluator's examples: the split's labels now, the images when first sampled. */
export async function loadClassifierEvalSet(e: VlmClassifierEvaluatorConfig, where: string, opts: SourceOptions = {}): Promise<ClassifierEvalSet> {
  const source = e.dataset !== null ? namedClassifierSource(e.dataset, e.split, null) : HfSourceSchema.parse({ path: e.data_path, split: e.split });
  const split = await loadClassifierSplit(source, e.split, classifierColumns(e, where), opts);
  const order = numpyPermutation(0, split.rows.length);
  const n = Math.min(split.rows.length, e.n_eval ?? split.rows.length);
  const examples = order.slice(0, n).map((i) => ({ row: split.rows[i], className: cleanClassName(rowClassName(split.rows[i], split.classNames)) }));
  const cache = new Map<string, Promise<ModelInput>>();
  const image = { maxImageSize: e.max_image_size, column: e.image_column_name };
  const build = async (i: number, renderer: Renderer) => {
    const { row } = examples[i];
    const [bytes] = await rowImageBytes([row], image.column);
    const decoded = await prepareImage(bytes, false, image, row.at);
    return renderer.buildGenerationPrompt(classifierPrompt(decoded), 'assistant', ANSWER_PREFIX);
  };
  return {
    examples,
    prompt(i, renderer) {
      if (n > CACHED_PROMPTS) return build(i, renderer);
      const key = `${renderer.name}:${i}`;
      let p = cache.get(key);
      if (!p) {
        p = build(i, renderer);
        cache.set(key, p);
        p.catch(() => cache.delete(key));
      }
      return p;
    },
  };
}

/** Runs `fn` over `items` with at most `limit` calls in flight; results in order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export const classifierMetricKey = (e: Pick<VlmClassifierEvaluatorConfig, 'name'>) => (e.name ? `${e.name}/accuracy` : 'accuracy');

/** Accuracy of the sampler's greedy class names; `seedFor` fixes each example's sample. */
export async function runClassifierEvaluator(
  e: VlmClassifierEvaluatorConfig,
  set: ClassifierEvalSet,
  sampler: SamplingSession,
  renderer: Renderer,
  seedFor: (example: number) => number,
): Promise<Record<string, number>> {
  const stop = renderer.getStopSequences();
  const verdicts = await mapLimited(set.examples, e.max_parallel_tasks, async ({ className }, i) => {
    const prompt = await set.prompt(i, renderer);
    const res = await sampler.sample(prompt, 1, { max_tokens: e.max_tokens, temperature: e.temperature, top_p: e.top_p, top_k: e.top_k, stop, seed: seedFor(i) });
    const tokens = res.sequences[0]?.tokens;
    if (!tokens) throw new Error('sampler returned no sequences');
    return predictedClassName(getTextContent(renderer.parseResponse(tokens).message)) === className;
  });
  const correct = verdicts.filter(Boolean).length;
  return { [classifierMetricKey(e)]: verdicts.length > 0 ? correct / verdicts.length : 0.0 };
}
