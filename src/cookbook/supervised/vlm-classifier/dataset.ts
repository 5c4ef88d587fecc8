// The reference's ClassifierDataset (recipes/vlm_classifier/data.py) as a supervised dataset:
// labels read up front, optionally cut to `examples_per_class` per class, each epoch's order the
// reference's (`random.Random(epoch).shuffle` per repeat, `ceil(num_repeats * n)` examples, the
// last batch possibly short, as the reference's `__len__` counts it), and a batch's images read,
// resized, flipped (seeded) and decoded only when the batch is loaded (`loadBatch` / `batchAt`).

import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Datum } from '../../../backends/types.js';
import { BatchedDataset, type BatchSource } from '../../epoch-batches.js';
import { ConfigurationError, DataFormatError, DataValidationError } from '../../errors.js';
import { HfSourceSchema, type HfSource } from '../../hf/config.js';
import type { DecodedImage } from '../../images/types.js';
import { rendererForModel, type ModelChoice } from '../../renderers/for-model.js';
import { TrainOnWhat, type Renderer } from '../../renderers/types.js';
import { deriveSeed } from '../../rl/seeds.js';
import type { Tokenizer } from '../../tokenizer.js';
import type { SupervisedDataset } from '../conversation-dataset.js';
import { datumFromModelInputWeights } from '../datum.js';
import { canonicalDatasetName, DEFAULT_MAX_LENGTH, NAMED_CLASSIFIER_DATASETS, type VlmClassifierSource } from './config.js';
import { classifierMessages, cleanClassName, samplePerClass, shuffledIndices } from './data.js';
import { prepareImage, rowImageBytes, type ImageOptions } from './images.js';
import { loadClassifierSplit, rowClassName, type ClassifierColumns, type ClassifierRow, type ClassifierSplit, type SourceOptions } from './source.js';

/** The chat dataset config's fields a vlm_classifier dataset reads. */
export interface VlmClassifierDatasetSettings {
  batch_size: number;
  max_length: number | null;
  train_on_what?: TrainOnWhat;
  test_size: number;
  renderer_name?: string;
  hf?: HfSource;
  vlm_classifier: VlmClassifierSource;
}

/** The repository folder a shipped dataset lives in (`data/shapes`), found above this module. */
function shippedPath(rel: string): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 10; i++) {
    if (existsSync(path.join(dir, rel))) return path.join(dir, rel);
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new DataFormatError(`cannot find the shipped dataset ${rel} above ${fileURLToPath(import.meta.url)}`);
}

/**
 * A named dataset or Hub id as an `hf` source with the reference's splits (train, test); a named
 * local one (`shapes`) resolves to its folder in the repository.
 */
export function namedClassifierSource(name: string, split = 'train', testSplit: string | null = 'test'): HfSource {
  const named = canonicalDatasetName(name);
  const id = named ? NAMED_CLASSIFIER_DATASETS[named] : name;
  const p = id.startsWith('data/') ? shippedPath(id) : id;
  return HfSourceSchema.parse({ path: p, split, test_split: testSplit });
}

export function classifierColumns(vc: { image_column_name: string; label_column_name: string }, prefix: string): ClassifierColumns {
  return { image: vc.image_column_name, label: vc.label_column_name, imageKey: `${prefix}.image_column_name`, labelKey: `${prefix}.label_column_name` };
}

/** Caches at most this many loaded batches (a pipelined step reads its batch twice). */
const LOADED_BATCHES = 4;

/** Batches of classifier examples in the reference's order; images decoded when a batch loads. */
export class ClassifierBatches implements BatchSource<ClassifierRow, Datum> {
  private order: number[];
  private epoch: number;
  private readonly loaded = new Map<string, Array<{ row: ClassifierRow; value: Datum }>>();

  constructor(
    private readonly rows: readonly ClassifierRow[],
    readonly batchSize: number,
    private readonly opts: {
      numRepeats: number;
      hflipProbability: number;
      augmentSeed: number;
      image: ImageOptions;
      toDatum: (row: ClassifierRow, image: DecodedImage) => Datum;
    },
  ) {
    // As the reference's constructor: the order of seed 0 until an epoch is set.
    this.epoch = 0;
    this.order = shuffledIndices(rows.length, opts.numRepeats, 0);
  }

  /** Batches per epoch, the last one possibly short (the reference's `ceil(len / batch_size)`). */
  get length(): number {
    return Math.ceil(this.order.length / this.batchSize);
  }

  setEpoch(seed: number): void {
    if (seed === this.epoch) return;
    this.order = shuffledIndices(this.rows.length, this.opts.numRepeats, seed);
    this.epoch = seed;
  }

  /** The positions (in the epoch's order) of batch `index`. */
  private positions(index: number): number[] {
    if (!Number.isInteger(index) || index < 0 || index >= this.length) throw new RangeError(`batch index ${index} out of range [0, ${this.length})`);
    const out: number[] = [];
    for (let p = index * this.batchSize; p < Math.min((index + 1) * this.batchSize, this.order.length); p++) out.push(p);
    return out;
  }

  /**
   * Whether the example at `position` of epoch `epoch` is flipped: a pure function of (augment
   * seed, epoch, position), where the reference draws from Python's unseeded global random.
   */
  flipped(epoch: number, position: number): boolean {
    const p = this.opts.hflipProbability;
    return p > 0 && deriveSeed(this.opts.augmentSeed, epoch, position) / 2 ** 31 < p;
  }

  async load(index: number): Promise<void> {
    const key = `${this.epoch}:${index}`;
    if (this.loaded.has(key)) return;
    const epoch = this.epoch;
    const positions = this.positions(index);
    const rows = positions.map((p) => this.rows[this.order[p]]);
    const bytes = await rowImageBytes(rows, this.opts.image.column);
    const images = await Promise.all(rows.map((row, i) => prepareImage(bytes[i], this.flipped(epoch, positions[i]), this.opts.image, row.at)));
    const batch = rows.map((row, i) => ({ row, value: this.opts.toDatum(row, images[i]) }));
    this.loaded.set(key, batch);
    while (this.loaded.size > LOADED_BATCHES) this.loaded.delete(this.loaded.keys().next().value!);
  }

  batch(index: number): Array<{ row: ClassifierRow; value: Datum }> {
    this.positions(index);
    const batch = this.loaded.get(`${this.epoch}:${index}`);
    if (!batch) throw new Error(`batch ${index} was not loaded: call loadBatch(${index}) (batchAt) first`);
    return batch;
  }
}

export class ClassifierDataset extends BatchedDataset<ClassifierRow, Datum, Datum[]> implements SupervisedDataset {
  getBatch(index: number): Datum[] {
    return this.batches.batch(index).map((b) => b.value);
  }
}

/** Row + decoded image → datum: the reference's build_supervised_example, token-sum weights (reduction none). */
function classifierDatumBuilder(renderer: Renderer, classNames: string[] | null, maxLength: number | null, trainOnWhat: TrainOnWhat) {
  return (row: ClassifierRow, image: DecodedImage): Datum => {
    const messages = classifierMessages(image, cleanClassName(rowClassName(row, classNames)));
    let datum: Datum;
    try {
      const { modelInput, weights } = renderer.buildSupervisedExample(messages, trainOnWhat);
      datum = datumFromModelInputWeights(modelInput, weights, maxLength, 'none');
    } catch (e) {
      const err = e as Error;
      err.message = `${row.at}: ${err.message}`;
      throw err;
    }
    if (!datum.loss_fn_inputs.weights.data.some((w) => w > 0)) {
      const cut = maxLength === null ? '' : ` after truncation to max_length=${maxLength}`;
      throw new DataValidationError(`${row.at}: the example has no trainable tokens${cut} (train_on_what=${trainOnWhat})`);
    }
    return datum;
  };
}

/** The renderer must render images: a text-only one is refused, naming the model and renderer. */
export function requireVisionRenderer(renderer: Renderer, model: ModelChoice | string): void {
  if (renderer.takesImages) return;
  const name = typeof model === 'string' ? model : model.model_name;
  throw new ConfigurationError(
    `the vlm_classifier recipe needs a vision-language model: ${name} renders with ${renderer.name}, which takes text only ` +
      '(use e.g. tiny-qwen3-vl on the local engine, or a Qwen3-VL / Qwen3.5 model with its VL renderer)',
  );
}

export async function buildVlmClassifierDatasets(
  cfg: VlmClassifierDatasetSettings,
  model: string | ModelChoice,
  opts: SourceOptions = {},
): Promise<{ train: SupervisedDataset; test?: SupervisedDataset; renderer: Renderer; tokenizer: Tokenizer }> {
  const vc = cfg.vlm_classifier;
  const source = vc.dataset !== null ? namedClassifierSource(vc.dataset) : cfg.hf!;
  const columns = classifierColumns(vc, 'dataset.vlm_classifier');
  const [trainSplit, { renderer, tokenizer }] = await Promise.all([loadClassifierSplit(source, source.split, columns, opts), rendererForModel(model, cfg.renderer_name)]);
  requireVisionRenderer(renderer, model);
  const trainOnWhat = cfg.train_on_what ?? TrainOnWhat.LAST_ASSISTANT_MESSAGE;
  const maxLength = cfg.max_length ?? DEFAULT_MAX_LENGTH;
  const image = { maxImageSize: vc.max_image_size, column: vc.image_column_name };
  const batchesOf = (split: ClassifierSplit, rows: readonly ClassifierRow[], batchSize: number | null, train: boolean) => {
    if (rows.length === 0) throw new DataFormatError(`${split.where}: no rows`);
    return new ClassifierDataset(
      new ClassifierBatches(rows, batchSize ?? rows.length, {
        numRepeats: train ? vc.num_repeats : 1,
        hflipProbability: train ? vc.hflip_probability : 0,
        augmentSeed: vc.augment_seed,
        image,
        toDatum: classifierDatumBuilder(renderer, split.classNames, maxLength, trainOnWhat),
      }),
    );
  };

  const trainRows = vc.examples_per_class === null ? trainSplit.rows : samplePerClass(trainSplit.rows.map((r) => r.label), vc.examples_per_class, vc.subset_seed).map((i) => trainSplit.rows[i]);
  const train = batchesOf(trainSplit, trainRows, cfg.batch_size, true);
  if (!vc.run_nll_evaluator) return { train, renderer, tokenizer };

  // The whole test split as one batch, as the reference's NLL evaluator takes every test batch;
  // test_size > 0 keeps that many (the first of the seed-0 order).
  const testSplit = await loadClassifierSplit(source, source.test_split!, columns, opts);
  const testRows = cfg.test_size > 0 ? shuffledIndices(testSplit.rows.length, 1, 0).slice(0, cfg.test_size).map((i) => testSplit.rows[i]) : testSplit.rows;
  return { train, test: batchesOf(testSplit, testRows, null, false), renderer, tokenizer };
}
