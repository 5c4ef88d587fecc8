// The rubric recipe's Prometheus experiment (reference recipes/rubric/prometheus_experimental.py and
// PrometheusDatapointListBuilder): every row of the Feedback Collection's train split becomes one
// rubric datapoint — the row's original instruction as the only user turn, graded by one rubric
// holding the row's criteria, the calibration of each score 1..5 and the reference answer, scored
// between 1 and 5. The rows come from the Hub id (through the HF cache or a download) or a local copy
// in the dataset's layout (docs/hf-datasets.md); the grading is rubric.ts's RubricGradedEnv.
import { z } from 'zod';
import { ConfigurationError, DataFormatError } from '../../errors.js';
import { HfSourceSchema } from '../../hf/config.js';
import { readRows } from '../../hf/readers.js';
import { splitFiles } from '../../hf/source.js';
import type { Renderer } from '../../renderers/types.js';
import type { SideSamplerSpec } from '../rollout-context.js';
import type { RLDataset } from '../types.js';
import { parseEnvArgs } from './args.js';
import { DEFAULT_EXTRACTION_REGEX, RubricGradedDataset, type RubricDatapoint } from './rubric.js';

export const PROMETHEUS_DATA_PATH = 'prometheus-eval/Feedback-Collection';
export const PROMETHEUS_GRADER_OUTPUT_FORMAT_INSTRUCTION = 'Please output your score between 1 and 5 wrapped in <score> ... </score>';

const SCORES = [1, 2, 3, 4, 5] as const;
/** The columns a datapoint reads. */
export const PROMETHEUS_COLUMNS = ['orig_instruction', 'orig_criteria', ...SCORES.map((i) => `orig_score${i}_description`), 'orig_reference_answer'];

/** build_rubric_datapoint: one row (`at` names it in errors) as a rubric datapoint. */
export function prometheusDatapoint(row: Record<string, unknown>, at: string): RubricDatapoint {
  const field = (name: string): string => {
    const v = row[name];
    if (typeof v !== 'string') throw new DataFormatError(`${at}: ${name}: expected a string, got ${v === undefined ? 'no such column' : JSON.stringify(v)}`);
    return v;
  };
  const rubricLines = [
    `Your job is to evaluate the following: ${field('orig_criteria')}. Your response should be a score between 1 to 5.`,
    'Here is the calibration for each score:',
    ...SCORES.map((i) => `<score>${i}.0</score>: ${field(`orig_score${i}_description`)}`),
    `Here is a reference response that achieved a score of 5: ${field('orig_reference_answer')}`,
  ];
  return {
    convo: [{ role: 'user', content: field('orig_instruction') }],
    rubric_items: [{ rubric_str: rubricLines.join('\n'), extraction_regex: DEFAULT_EXTRACTION_REGEX, grader_output_format_instruction: PROMETHEUS_GRADER_OUTPUT_FORMAT_INSTRUCTION }],
  };
}

/** The train split's rows, in file order, as datapoints (`load_dataset(data_path)["train"]`). */
export async function loadPrometheusDatapoints(hf: z.input<typeof HfSourceSchema>, baseDir?: string): Promise<RubricDatapoint[]> {
  const src = HfSourceSchema.parse(hf);
  const out: RubricDatapoint[] = [];
  for (const file of await splitFiles(src, src.split, { baseDir })) {
    for await (const raw of readRows(file, PROMETHEUS_COLUMNS, { someColumns: true })) out.push(prometheusDatapoint(raw.data, raw.at));
  }
  if (out.length === 0) throw new DataFormatError(`${src.path}: split "${src.split}" has no rows`);
  return out;
}

/** prometheus_experimental's get_dataset_builder: no test set; the grader is the reference's. */
export const RubricPrometheusArgsSchema = z.strictObject({
  /** Groups (datapoints) per batch: the CLI's groups_per_batch. */
  batch_size: z.int().positive(),
  train_group_size: z.int().positive(),
  /** The Feedback Collection: the Hub id, or a local copy (relative to the repository root) in its layout. */
  hf: HfSourceSchema.default(() => HfSourceSchema.parse({ path: PROMETHEUS_DATA_PATH })),
  /** The grader's base model; null = the policy's own base weights. */
  grader_llm_name: z.string().min(1).nullable().default('Qwen/Qwen3.6-35B-A3B'),
  grader_renderer_name: z.string().min(1).nullable().default(null),
  grader_max_tokens: z.int().positive().default(2048),
});

export async function buildRubricPrometheusDatasets(args: Record<string, unknown>, renderer: Renderer, repoRoot: string): Promise<{ train: RLDataset }> {
  const a = parseEnvArgs(RubricPrometheusArgsSchema, args, 'rubric_prometheus');
  if (a.hf.test_split !== null) throw new ConfigurationError('dataset.args.hf.test_split: the Prometheus experiment has no test set');
  if (a.hf.streaming) throw new ConfigurationError('dataset.args.hf.streaming: the Prometheus rows load whole; streaming is not supported');
  const datapoints = await loadPrometheusDatapoints(a.hf, repoRoot);
  if (a.batch_size > datapoints.length) throw new ConfigurationError(`dataset.args.batch_size: ${a.batch_size} exceeds the ${datapoints.length} datapoints of ${a.hf.path}`);
  const grader: SideSamplerSpec = { model: a.grader_llm_name, rendererName: a.grader_renderer_name, maxTokens: a.grader_max_tokens };
  return { train: new RubricGradedDataset(renderer, a.batch_size, a.train_group_size, datapoints, grader) };
}
