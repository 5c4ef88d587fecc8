// The which_shape env: an image observation (a shape drawn from a seeded description), rewarded
// for naming the shape; the same batch index draws the same pictures, byte for byte.
import { beforeAll, describe, expect, it } from 'vitest';
import type { ImageChunk } from '../../../src/backends/types.js';
import { ConfigurationError } from '../../../src/cookbook/errors.js';
import { rendererForModel } from '../../../src/cookbook/renderers/for-model.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import { drawShape, SHAPES } from '../../../src/cookbook/rl/envs/shape-images.js';
import { buildWhichShapeDatasets, whichShapePictures, WhichShapeEnv } from '../../../src/cookbook/rl/envs/which-shape.js';
import type { Tokenizer } from '../../../src/cookbook/tokenizer.js';

let renderer: Renderer;
let tokenizer: Tokenizer;
beforeAll(async () => {
  ({ renderer, tokenizer } = await rendererForModel('tiny-qwen3-vl'));
});

const reply = (text: string) => [...tokenizer.encode(text, { addSpecialTokens: false }), ...tokenizer.encode('<|im_end|>', { addSpecialTokens: false })];

describe('which_shape', () => {
  it('draws the same pictures for a batch index, and different ones for another', async () => {
    const a = whichShapePictures(3, 8, 64);
    expect(whichShapePictures(3, 8, 64)).toEqual(a);
    expect(whichShapePictures(4, 8, 64)).not.toEqual(a);
    expect(Buffer.from(await drawShape(a[0]))).toEqual(Buffer.from(await drawShape(a[0])));
    expect(new Set(whichShapePictures(0, 64, 64).map((p) => p.shape))).toEqual(new Set(SHAPES));
  });

  it('observes one image (a 64-px picture is 4 tiny-qwen3-vl tokens) and the question', async () => {
    const [picture] = whichShapePictures(0, 1, 64);
    const { ob } = await new WhichShapeEnv(picture, renderer).initialObservation();
    const images = ob.chunks.filter((c): c is ImageChunk => c.type === 'image');
    expect(images.map((c) => c.expected_tokens)).toEqual([4]);
    const text = ob.chunks.map((c) => (c.type === 'encoded_text' ? tokenizer.decode(c.tokens, { skipSpecialTokens: false }) : '[image]')).join('');
    expect(text).toContain('<|vision_start|>[image]<|vision_end|>Which shape is this');
  });

  it('rewards naming the drawn shape, and only that', async () => {
    const picture = { ...whichShapePictures(0, 1, 64)[0], shape: 'star' as const };
    const env = new WhichShapeEnv(picture, renderer);
    await env.initialObservation();
    expect((await env.step(reply('Star'))).reward).toBe(1);
    expect((await env.step(reply('A circle'))).reward).toBe(0);
    expect((await env.step(reply('I see a triangle, no, a star'))).metrics?.correct).toBe(0);
    expect((await env.step([])).reward).toBeLessThan(1);
  });

  it('is refused for a text-only model, naming why', async () => {
    const { renderer: text } = await rendererForModel('tiny-qwen3');
    expect(() => buildWhichShapeDatasets({}, text)).toThrow(ConfigurationError);
    expect(() => buildWhichShapeDatasets({}, text)).toThrow(/renders text only: use a vision model/);
    expect(() => buildWhichShapeDatasets({ image_size: 2 }, renderer)).toThrow(/dataset\.args\.image_size/);
  });

  it('holds out test batches drawn after the training ones', () => {
    const { train, test } = buildWhichShapeDatasets({ n_batches: 5, batch_size: 2 }, renderer);
    expect(train.length).toBe(5);
    expect(test?.length).toBe(1);
  });
});
