// The vlm_classifier recipe's dataset and evaluator (reference recipes/vlm_classifier): the epoch
// order, per-class sampling and class names against goldens the reference's own code computed
// (test/fixtures/vlm_classifier_gen_goldens.py), the shipped shapes set read as datasets' imagefolder
// reads it, parquet Image cells with ClassLabel names, the label text, seeded flips, resizing, the
// evaluator's parse and accuracy, and errors that name the row and the config path.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Binary, Field, Int64, Struct, Table, tableToIPC, Utf8, vectorFromArray } from 'apache-arrow';
import { parquetWriteBuffer } from 'hyparquet-writer';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { ModelInput, SamplingSession } from '../../src/backends/types.js';
import { listFiles } from '../../src/cookbook/hf/layout.js';
import { HfSourceSchema } from '../../src/cookbook/hf/config.js';
import { getTokenizer } from '../../src/cookbook/tokenizer.js';
import { SupervisedConfigSchema } from '../../src/cookbook/config/sl.js';
import { buildChatDatasets, ChatDatasetConfigSchema } from '../../src/cookbook/supervised/dataset.js';
import { VlmClassifierEvaluatorSchema } from '../../src/cookbook/supervised/vlm-classifier/config.js';
import { answerFor, cleanClassName, predictedClassName, samplePerClass, shuffledIndices } from '../../src/cookbook/supervised/vlm-classifier/data.js';
import { ClassifierBatches, namedClassifierSource } from '../../src/cookbook/supervised/vlm-classifier/dataset.js';
import { loadClassifierEvalSet, runClassifierEvaluator } from '../../src/cookbook/supervised/vlm-classifier/evaluator.js';
import { prepareImage, resizedSize } from '../../src/cookbook/supervised/vlm-classifier/images.js';
import { loadClassifierSplit, readmeClassNames } from '../../src/cookbook/supervised/vlm-classifier/source.js';
import { rendererForModel } from '../../src/cookbook/renderers/for-model.js';
import { resolveRun, TRAINABLE_KINDS } from '../../src/cli/train.js';
import { expandPoints } from '../../src/cookbook/config/sweep-points.js';

const root = new URL('../../', import.meta.url).pathname;
const goldens = JSON.parse(readFileSync(path.join(root, 'test/fixtures/vlm_classifier_goldens.json'), 'utf8'));
const MODEL = 'tiny-qwen3-vl';
const columns = { image: 'image', label: 'label', imageKey: 'dataset.vlm_classifier.image_column_name', labelKey: 'dataset.vlm_classifier.label_column_name' };
const dir = mkdtempSync(path.join(tmpdir(), 'cookbook-vlm-'));

/** A PNG of `width`×`height`: the left half `left`, the right half `right` (RGB). */
function halves(width: number, height: number, left: number[], right: number[]): Promise<Buffer> {
  const px = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) px.set(x < width / 2 ? left : right, (y * width + x) * 3);
  return sharp(px, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

/** The decoded image's pixel at (x, y). */
async function pixel(jpeg: Uint8Array, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(jpeg).raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * info.channels;
  return [...data.subarray(i, i + 3)];
}

const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - b[i]) <= 12);

/** A parquet file with an HF Image struct column and an int64 ClassLabel column, `groupSize` rows per row group. */
function writeImageParquet(file: string, rows: Array<{ bytes: Uint8Array | null; path: string | null; label: number }>, opts: { names?: string[]; groupSize?: number; imageColumn?: string } = {}) {
  const image = opts.imageColumn ?? 'image';
  const schema = [
    { name: 'root', num_children: 2 },
    { name: image, repetition_type: 'OPTIONAL', num_children: 2 },
    { name: 'bytes', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
    { name: 'path', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
    { name: 'label', type: 'INT64', repetition_type: 'OPTIONAL' },
  ];
  const kvMetadata = opts.names ? [{ key: 'huggingface', value: JSON.stringify({ info: { features: { [image]: { _type: 'Image' }, label: { names: opts.names, _type: 'ClassLabel' } } } }) }] : undefined;
  const buf = parquetWriteBuffer({
    columnData: [
      { name: image, data: rows.map((r) => ({ bytes: r.bytes, path: r.path })) },
      { name: 'label', data: rows.map((r) => BigInt(r.label)) },
    ] as never,
    schema: schema as never,
    rowGroupSize: opts.groupSize ?? 1000,
    kvMetadata,
  });
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, new Uint8Array(buf));
}

describe('order and sampling (goldens from the reference)', () => {
  it('get_shuffled_indices: random.Random(seed).shuffle per repeat, cut at ceil(num_repeats * n)', () => {
    for (const g of goldens.shuffled) expect([g.n, g.num_repeats, g.seed, shuffledIndices(g.n, g.num_repeats, g.seed)]).toEqual([g.n, g.num_repeats, g.seed, g.indices]);
  });

  it('_sample_per_class: classes in sorted order, each shuffled by one Random(subset_seed), cut to k', () => {
    for (const g of goldens.per_class) expect([g.k, g.seed, samplePerClass(g.labels, g.k, g.seed)]).toEqual([g.k, g.seed, g.rows]);
  });

  it('cleans class names and formats the label as the reference', () => {
    for (const [name, cleaned] of Object.entries(goldens.class_names)) expect(cleanClassName(name)).toBe(cleaned);
    expect(answerFor('red circle')).toBe('The subject in this photo is: red circle\n');
    expect(predictedClassName(' Red Circle\n')).toBe('red circle');
    expect(predictedClassName('The subject in this photo is: a: b ')).toBe('b');
  });

  it('reads data/shapes as datasets imagefolder: the reference trains on the same files in the same order', async () => {
    const split = await loadClassifierSplit(namedClassifierSource('shapes'), 'train', columns);
    expect(split.classNames).toEqual(['blue_circle', 'blue_square', 'blue_triangle', 'green_circle', 'green_square', 'green_triangle', 'red_circle', 'red_square', 'red_triangle']);
    expect(split.rows).toHaveLength(144);
    for (const g of goldens.shapes) {
      const sampled = samplePerClass(split.rows.map((r) => r.label), g.examples_per_class, g.subset_seed).map((i) => split.rows[i]);
      const epoch = shuffledIndices(sampled.length, g.num_repeats, g.epoch).map((i) => sampled[i]);
      const ours = epoch.map((r) => [r.at.split('data/shapes/')[1], cleanClassName(split.classNames![r.label as number])]);
      expect(ours).toEqual(g.rows);
    }
    expect((await loadClassifierSplit(namedClassifierSource('shapes'), 'test', columns)).rows).toHaveLength(54);
  });

  it('data/shapes is exactly what scripts/gen-shapes-dataset.mjs draws (pixels)', async () => {
    const out = mkdtempSync(path.join(tmpdir(), 'shapes-'));
    execFileSync(process.execPath, [path.join(root, 'scripts/gen-shapes-dataset.mjs'), out]);
    const shipped = listFiles(path.join(root, 'data/shapes'));
    expect(listFiles(out)).toEqual(shipped);
    for (const rel of shipped) {
      const [a, b] = await Promise.all([path.join(out, rel), path.join(root, 'data/shapes', rel)].map((f) => sharp(f).raw().toBuffer()));
      expect([rel, a.equals(b)]).toEqual([rel, true]);
    }
  });
});

describe('the training dataset', () => {
  it('trains on the class name after the prompt; ceil(num_repeats × rows / batch) batches, the last one short', async () => {
    const { train, test, renderer } = await buildChatDatasets({ vlm_classifier: { dataset: 'shapes', examples_per_class: 2, num_repeats: 1.5 }, batch_size: 4 }, MODEL);
    expect(renderer.name).toBe('qwen3_vl_instruct');
    expect(test).toBeUndefined();
    expect(train.length).toBe(Math.ceil(27 / 4));
    const tokenizer = await getTokenizer(MODEL);
    const batch = await train.batchAt(1, 0);
    expect(batch).toHaveLength(4);
    const firstClass = goldens.shapes[0].rows[0][1];
    const d = batch[0];
    const images = d.model_input.chunks.filter((c) => c.type === 'image');
    expect(images).toHaveLength(1);
    expect(images[0]).toMatchObject({ format: 'jpeg', expected_tokens: 16 }); // 128×128 for tiny-qwen3-vl
    const trained = d.loss_fn_inputs.target_tokens.data.filter((_, i) => d.loss_fn_inputs.weights.data[i] > 0);
    expect(tokenizer.decode(trained)).toBe(`The subject in this photo is: ${firstClass}\n<|im_end|>`);
    // Token-sum weights (the reference's datum_from_model_input_weights default), not a mean.
    expect(new Set(d.loss_fn_inputs.weights.data)).toEqual(new Set([0, 1]));
    expect(await train.batchAt(1, 6)).toHaveLength(3);
    expect(() => train.getBatch(5)).toThrow(/not loaded/);
  });

  it('a batch is a pure function of the config, epoch and index: a rebuilt dataset (a resumed run) reads the same datums', async () => {
    const cfg = { vlm_classifier: { dataset: 'shapes' as const, augment_seed: 7 }, batch_size: 16 };
    const [a, b] = await Promise.all([buildChatDatasets(cfg, MODEL), buildChatDatasets(cfg, MODEL)]);
    await a.train.batchAt(0, 1); // a different history before the batch compared
    const [x, y] = [await a.train.batchAt(2, 3), await b.train.batchAt(2, 3)];
    expect(JSON.stringify(x)).toBe(JSON.stringify(y));
    const other = await buildChatDatasets({ ...cfg, vlm_classifier: { ...cfg.vlm_classifier, augment_seed: 8 } }, MODEL);
    expect(JSON.stringify(await other.train.batchAt(2, 3))).not.toBe(JSON.stringify(x));
  });

  it('run_nll_evaluator builds the test split (no flips, no sampling) as one batch; test_size caps it', async () => {
    const { test } = await buildChatDatasets({ vlm_classifier: { dataset: 'shapes', examples_per_class: 1, run_nll_evaluator: true }, batch_size: 4, test_size: 10 }, MODEL);
    await test!.loadBatch(0);
    expect(test!.length).toBe(1);
    expect(test!.getBatch(0)).toHaveLength(10);
  });

  it('flips a seeded half of the images: the same ones on every run, others in another epoch', async () => {
    const make = (augmentSeed: number) =>
      new ClassifierBatches([], 1, { numRepeats: 1, hflipProbability: 0.5, augmentSeed, image: { maxImageSize: 480, column: 'image' }, toDatum: () => undefined as never });
    const a = make(0);
    const flips = (b: ClassifierBatches, epoch: number) => Array.from({ length: 400 }, (_, p) => b.flipped(epoch, p));
    expect(flips(make(0), 3)).toEqual(flips(a, 3));
    const share = flips(a, 0).filter(Boolean).length / 400;
    expect(share).toBeGreaterThan(0.4);
    expect(share).toBeLessThan(0.6);
    expect(flips(a, 1)).not.toEqual(flips(a, 0));
    expect(flips(make(1), 0)).not.toEqual(flips(a, 0));
    const never = new ClassifierBatches([], 1, { numRepeats: 1, hflipProbability: 0, augmentSeed: 0, image: { maxImageSize: 480, column: 'image' }, toDatum: () => undefined as never });
    expect(flips(never, 0).some(Boolean)).toBe(false);

    // A flipped image is the mirror of the original.
    const png = await halves(64, 64, [250, 0, 0], [0, 0, 250]);
    const plain = await prepareImage(png, false, { maxImageSize: 480, column: 'image' }, 'x');
    const flipped = await prepareImage(png, true, { maxImageSize: 480, column: 'image' }, 'x');
    expect(near(await pixel(plain.jpeg, 4, 30), [250, 0, 0])).toBe(true);
    expect(near(await pixel(flipped.jpeg, 4, 30), [0, 0, 250])).toBe(true);
    expect(near(await pixel(flipped.jpeg, 60, 30), [250, 0, 0])).toBe(true);
  });

  it('resizes the longest side to max_image_size as resize_image does (int() of the other side)', async () => {
    expect(resizedSize(640, 427, 480)).toEqual({ width: 480, height: 320 });
    expect(resizedSize(300, 1000, 480)).toEqual({ width: 144, height: 480 });
    expect(resizedSize(480, 100, 480)).toBeUndefined();
    expect(resizedSize(500, 500, 480)).toEqual({ width: 480, height: 480 });
    const img = await prepareImage(await halves(640, 427, [0, 200, 0], [0, 200, 0]), false, { maxImageSize: 480, column: 'image' }, 'x');
    expect([img.width, img.height]).toEqual([480, 320]);
  });
});

describe('parquet and JSONL sources', () => {
  it('reads Image cells from parquet row groups when a batch loads, with the ClassLabel names of the file metadata', async () => {
    const pngs = await Promise.all([0, 1, 2, 3, 4, 5, 6].map((i) => halves(32, 32, [i * 30, 0, 0], [0, 0, 0])));
    const rows = pngs.map((bytes, i) => ({ bytes: new Uint8Array(bytes), path: `img${i}.png`, label: i % 3 }));
    writeImageParquet(path.join(dir, 'pq', 'data', 'train-00000-of-00001.parquet'), rows, { names: ['Faces_easy', 'sun.flower', 'water-lilly'], groupSize: 3 });
    writeImageParquet(path.join(dir, 'pq', 'data', 'test-00000-of-00001.parquet'), rows.slice(0, 2), { names: ['Faces_easy', 'sun.flower', 'water-lilly'] });
    const split = await loadClassifierSplit(HfSourceSchema.parse({ path: path.join(dir, 'pq') }), 'train', columns);
    expect(split.classNames).toEqual(['Faces_easy', 'sun.flower', 'water-lilly']);
    expect(split.rows.map((r) => r.label)).toEqual([0, 1, 2, 0, 1, 2, 0]);
    expect(split.rows.every((r) => r.image.kind === 'parquet')).toBe(true);

    const { train } = await buildChatDatasets({ hf: { path: path.join(dir, 'pq') }, vlm_classifier: { hflip_probability: 0 }, batch_size: 7 }, MODEL);
    const tokenizer = await getTokenizer(MODEL);
    const batch = await train.batchAt(0, 0);
    const order = shuffledIndices(7, 1, 0);
    for (const [k, d] of batch.entries()) {
      const trained = tokenizer.decode(d.loss_fn_inputs.target_tokens.data.filter((_, i) => d.loss_fn_inputs.weights.data[i] > 0));
      expect(trained).toContain(['faces easy', 'sun flower', 'water lilly'][order[k] % 3]);
      const chunk = d.model_input.chunks.find((c) => c.type === 'image')!;
      // Each image came from its own row (its red level says which).
      const red = (await pixel(Buffer.from((chunk as { data: string }).data, 'base64'), 4, 16))[0];
      expect(Math.abs(red - order[k] * 30)).toBeLessThanOrEqual(8);
    }
  });

  it("reads a save_to_disk folder (Arrow stream shards) with the ClassLabel names of the Arrow schema's metadata", async () => {
    const root = path.join(dir, 'saved');
    const names = ['Abyssinian', 'american_bulldog'];
    const pngs = await Promise.all([0, 1, 2].map((i) => halves(16, 16, [i * 100, 0, 0], [0, 0, 0])));
    const imageType = new Struct([new Field('bytes', new Binary(), true), new Field('path', new Utf8(), true)]);
    const table = new Table({
      image: vectorFromArray(pngs.map((b, i) => ({ bytes: new Uint8Array(b), path: `${i}.png` })), imageType),
      label: vectorFromArray([1n, 0n, 1n], new Int64()),
    });
    table.schema.metadata.set('huggingface', JSON.stringify({ info: { features: { image: { _type: 'Image' }, label: { names, _type: 'ClassLabel' } } } }));
    mkdirSync(path.join(root, 'train'), { recursive: true });
    writeFileSync(path.join(root, 'dataset_dict.json'), JSON.stringify({ splits: ['train'] }));
    writeFileSync(path.join(root, 'train', 'data-00000-of-00001.arrow'), tableToIPC(table, 'stream'));
    writeFileSync(path.join(root, 'train', 'state.json'), JSON.stringify({ _data_files: [{ filename: 'data-00000-of-00001.arrow' }], _split: 'train' }));
    const split = await loadClassifierSplit(HfSourceSchema.parse({ path: root }), 'train', columns);
    expect(split.classNames).toEqual(names);
    expect(split.rows.map((r) => [r.label, r.at])).toEqual([1, 0, 1].map((l, i) => [l, `${root}/train/data-00000-of-00001.arrow row ${i + 1}`]));
    const { train } = await buildChatDatasets({ hf: { path: root }, vlm_classifier: {}, batch_size: 3 }, MODEL);
    const tokenizer = await getTokenizer(MODEL);
    const texts = (await train.batchAt(0, 0)).map((x) => tokenizer.decode(x.loss_fn_inputs.target_tokens.data.filter((_, i) => x.loss_fn_inputs.weights.data[i] > 0)));
    expect(texts.sort()).toEqual(['abyssinian', 'american bulldog', 'american bulldog'].map((c) => `The subject in this photo is: ${c}\n<|im_end|>`));
  });

  it('reads ClassLabel names from a README card when the files carry none', () => {
    const card = ['---', 'dataset_info:', '  features:', '  - name: image', '    dtype: image', '  - name: label', '    dtype:', '      class_label:', '        names:', "          '0': accordion", "          '1': 'air planes'", '  splits:', '  - name: train', '---', '# Caltech'].join('\n');
    expect(readmeClassNames(card, 'label')).toEqual(['accordion', 'air planes']);
    expect(readmeClassNames(card, 'image')).toBeNull();
  });

  it('takes image paths (relative to the file) and class-name strings from JSONL', async () => {
    const d = path.join(dir, 'jsonl');
    mkdirSync(path.join(d, 'imgs'), { recursive: true });
    writeFileSync(path.join(d, 'imgs', 'a.png'), await halves(16, 16, [0, 0, 0], [255, 255, 255]));
    writeFileSync(path.join(d, 'train.jsonl'), ['{"img": "imgs/a.png", "cls": "Golden_Retriever"}', '{"img": {"bytes": null, "path": "imgs/a.png"}, "cls": "Pug"}'].join('\n') + '\n');
    const { train } = await buildChatDatasets({ hf: { path: d }, vlm_classifier: { image_column_name: 'img', label_column_name: 'cls' }, batch_size: 2 }, MODEL);
    const tokenizer = await getTokenizer(MODEL);
    const texts = (await train.batchAt(0, 0)).map((x) => tokenizer.decode(x.loss_fn_inputs.target_tokens.data.filter((_, i) => x.loss_fn_inputs.weights.data[i] > 0)));
    expect(texts.sort()).toEqual(['The subject in this photo is: golden retriever\n<|im_end|>', 'The subject in this photo is: pug\n<|im_end|>']);
  });
});

describe('errors name the row and the config path', () => {
  it('a missing image column names the file, the column, its config key and the columns there are', async () => {
    writeImageParquet(path.join(dir, 'pqcol', 'train.parquet'), [{ bytes: new Uint8Array([1]), path: null, label: 0 }], { names: ['a'], imageColumn: 'picture' });
    await expect(buildChatDatasets({ hf: { path: path.join(dir, 'pqcol') }, vlm_classifier: {}, batch_size: 1 }, MODEL)).rejects.toThrow(
      `${path.join(dir, 'pqcol')}/train.parquet: no column "image" (dataset.vlm_classifier.image_column_name); its columns: picture, label`,
    );
    const d = path.join(dir, 'jsonlcol');
    mkdirSync(d, { recursive: true });
    writeFileSync(path.join(d, 'train.jsonl'), '{"image": "x.png", "label": "a"}\n{"img": "x.png", "label": "a"}\n');
    await expect(buildChatDatasets({ hf: { path: d }, vlm_classifier: {}, batch_size: 1 }, MODEL)).rejects.toThrow(
      `${d}/train.jsonl:2: no column "image" (dataset.vlm_classifier.image_column_name); its columns: img, label`,
    );
  });

  it('an undecodable image names its row when its batch loads', async () => {
    const good = new Uint8Array(await halves(16, 16, [1, 2, 3], [4, 5, 6]));
    writeImageParquet(path.join(dir, 'pqbad', 'train.parquet'), [{ bytes: good, path: null, label: 0 }, { bytes: good, path: null, label: 0 }, { bytes: new Uint8Array([1, 2, 3, 4]), path: 'broken.jpg', label: 1 }], { names: ['a', 'b'] });
    const { train } = await buildChatDatasets({ hf: { path: path.join(dir, 'pqbad') }, vlm_classifier: {}, batch_size: 3 }, MODEL);
    await expect(train.batchAt(0, 0)).rejects.toThrow(`${path.join(dir, 'pqbad')}/train.parquet row 3: column "image": cannot decode the image`);
  });

  it('integer labels without ClassLabel names, and a label out of range, name the row', async () => {
    writeImageParquet(path.join(dir, 'pqnames', 'train.parquet'), [{ bytes: new Uint8Array([1]), path: null, label: 0 }]);
    await expect(buildChatDatasets({ hf: { path: path.join(dir, 'pqnames') }, vlm_classifier: {}, batch_size: 1 }, MODEL)).rejects.toThrow(/train\.parquet row 1: column "label" \(dataset\.vlm_classifier\.label_column_name\) holds integers, but the dataset declares no ClassLabel names/);
    writeImageParquet(path.join(dir, 'pqrange', 'train.parquet'), [{ bytes: new Uint8Array([1]), path: null, label: 5 }], { names: ['a', 'b'] });
    await expect(buildChatDatasets({ hf: { path: path.join(dir, 'pqrange') }, vlm_classifier: {}, batch_size: 1 }, MODEL)).rejects.toThrow(/train\.parquet row 1: label 5 is not one of the 2 classes/);
  });

  it('a text-only model is refused, naming its renderer', async () => {
    await expect(buildChatDatasets({ vlm_classifier: { dataset: 'shapes' }, batch_size: 4 }, 'tiny-qwen3')).rejects.toThrow(/needs a vision-language model: tiny-qwen3 renders with qwen3, which takes text only/);
  });

  it('config errors name the path', () => {
    const issues = (input: unknown) => ChatDatasetConfigSchema.safeParse(input).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? [];
    expect(issues({ vlm_classifier: {}, batch_size: 4 })).toEqual(['vlm_classifier.dataset: set vlm_classifier.dataset (a named dataset or a Hub id) or hf (a local folder or Hub id)']);
    expect(issues({ vlm_classifier: { dataset: 'shapes' }, builtin: 'example_chat', batch_size: 4 })[0]).toMatch(/^builtin: a vlm_classifier dataset reads images/);
    expect(issues({ vlm_classifier: { dataset: 'imagenet' }, batch_size: 4 })[0]).toMatch(/^vlm_classifier\.dataset: a named dataset \(caltech101, flowers102, pets, cars, shapes/);
    expect(issues({ vlm_classifier: { run_nll_evaluator: true }, hf: { path: 'x' }, batch_size: 4 })).toEqual(['hf.test_split: run_nll_evaluator needs a test split: set hf.test_split (e.g. "test")']);
    expect(issues({ vlm_classifier: { hflip_probability: 2, dataset: 'pets' }, batch_size: 4 })[0]).toMatch(/^vlm_classifier\.hflip_probability/);
    const ev = VlmClassifierEvaluatorSchema.safeParse({ kind: 'vlm_classifier', dataset: 'shapes', data_path: 'x' });
    expect(ev.error?.issues[0].message).toMatch(/set exactly one of dataset .* and data_path/);
    const cfg = SupervisedConfigSchema.parse({ model_name: MODEL, dataset: { vlm_classifier: { dataset: 'oxford_pets' }, batch_size: 32 }, evaluators: [{ kind: 'vlm_classifier', dataset: 'pets', n_eval: 128 }] });
    expect(cfg.dataset.vlm_classifier).toMatchObject({ num_repeats: 1, max_image_size: 480, hflip_probability: 0.5, examples_per_class: null, subset_seed: 0 });
    expect(cfg.evaluators[0]).toMatchObject({ temperature: 0, max_tokens: 128, top_p: 1, top_k: -1, max_image_size: 480, split: 'test' });
    expect(() => SupervisedConfigSchema.parse({ model_name: MODEL, dataset: { builtin: 'example_chat', batch_size: 4 }, evaluators: [{ kind: 'vlm_classifier', dataset: 'shapes' }, { kind: 'custom_sampling', file_path: 'x' }] })).toThrow(/would both report accuracy/);
  });
});

describe('the evaluator (reference ClassifierEvaluator)', () => {
  it('prefills the answer, reads the class after the last ":" and reports accuracy over the first n_eval of shuffle(seed=0)', async () => {
    const e = VlmClassifierEvaluatorSchema.parse({ kind: 'vlm_classifier', dataset: 'shapes', n_eval: 12, max_parallel_tasks: 3 });
    const set = await loadClassifierEvalSet(e, 'evaluators.0');
    expect(set.examples).toHaveLength(12);
    const { renderer, tokenizer } = await rendererForModel(MODEL);
    const prompts: ModelInput[] = [];
    let inFlight = 0;
    let most = 0;
    // A stand-in sampler (unit test only): right for the first 9 examples, wrong for the rest.
    const sampler = {
      async sample(prompt: ModelInput, _n: number, params: { temperature?: number; seed?: number }) {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((r) => setImmediate(r));
        inFlight--;
        const i = prompts.push(prompt) - 1;
        expect(params.temperature).toBe(0);
        const cls = set.examples[params.seed!].className;
        const text = params.seed! < 9 ? ` ${cls.toUpperCase()}\n` : ' a pineapple\n';
        return { sequences: [{ tokens: [...tokenizer.encode(text, { addSpecialTokens: false }), ...tokenizer.encode('<|im_end|>', { addSpecialTokens: false })], stop_reason: 'stop' }], i };
      },
    } as unknown as SamplingSession;
    const metrics = await runClassifierEvaluator(e, set, sampler, renderer, (i) => i);
    expect(metrics).toEqual({ accuracy: 9 / 12 });
    expect(most).toBeLessThanOrEqual(3);
    const chunks = prompts[0].chunks;
    const imageAt = chunks.findIndex((c) => c.type === 'image');
    expect(imageAt).toBeGreaterThan(0);
    const after = tokenizer.decode(chunks.slice(imageAt + 1).flatMap((c) => (c as { tokens: number[] }).tokens));
    expect(after).toBe('<|vision_end|>What is the name of the subject in this photo?<|im_end|>\n<|im_start|>assistant\nThe subject in this photo is:');
    const named = await runClassifierEvaluator({ ...e, name: 'shapes' }, set, sampler, renderer, (i) => i);
    expect(Object.keys(named)).toEqual(['shapes/accuracy']);
  });
});

describe('the shipped configs', () => {
  it('configs/vlm_classifier.json trains tiny-qwen3-vl on shapes with the accuracy evaluator; its data checks as the CLI checks it', async () => {
    const run = resolveRun('sl', path.join(root, 'configs/vlm_classifier.json'), [], { runsDir: dir });
    expect(run.config).toMatchObject({ model_name: MODEL, dataset: { vlm_classifier: { dataset: 'shapes' } }, evaluators: [{ kind: 'vlm_classifier', dataset: 'shapes' }] });
    expect(await TRAINABLE_KINDS.sl.checkData!(run.config)).toEqual({ steps: 306, batches: 18, epochs: 17 });
  });

  it("configs/sweep_vlm_classifier.json sweeps the reference's shots per class at equal step counts", () => {
    const sweep = resolveRun('sweep', path.join(root, 'configs/sweep_vlm_classifier.json'), [], { runsDir: dir });
    expect(expandPoints(sweep.config as never).map((p) => p.params['dataset.vlm_classifier.examples_per_class'])).toEqual([1, 2, 4, 8, 16]);
    expect(sweep.config).toMatchObject({ metric: 'accuracy', mode: 'max', base: { max_steps: 201, eval_every: 50, evaluators: [{ kind: 'vlm_classifier' }] } });
  });
});
