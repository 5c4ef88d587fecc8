// Vision renderers with images: an image part becomes one ImageChunk (the decoded JPEG, sized by
// the model's image processor) between the format's vision markers; it carries one weight per
// position it takes; text-only renderers and unloaded images are refused, naming the part.
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ImageChunk, ModelInputChunk } from '../../src/backends/types.js';
import { RendererError } from '../../src/cookbook/errors.js';
import { loadMessageImages } from '../../src/cookbook/images/messages.js';
import { TINY_QWEN3_VL_IMAGE_PROCESSOR } from '../../src/cookbook/images/processors.js';
import { modelInputLength } from '../../src/cookbook/model-input.js';
import { rendererForModel } from '../../src/cookbook/renderers/for-model.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import { TrainOnWhat, type Message } from '../../src/cookbook/renderers/types.js';
import { conversationToDatum } from '../../src/cookbook/supervised/datum.js';
import { getTokenizer, type Tokenizer } from '../../src/cookbook/tokenizer.js';

let tok: Tokenizer;
let png: Uint8Array;
let conversation: Message[];
beforeAll(async () => {
  tok = await getTokenizer('Qwen/Qwen3-8B');
  png = new Uint8Array(await sharp({ create: { width: 96, height: 64, channels: 3, background: '#3366cc' } }).png().toBuffer());
  conversation = [
    { role: 'user', content: [{ type: 'image', image: png }, { type: 'text', text: 'What colour is this?' }] },
    { role: 'assistant', content: 'Blue.' },
  ];
});

const enc = (s: string) => tok.encode(s, { addSpecialTokens: false });
const images = (chunks: ModelInputChunk[]) => chunks.filter((c): c is ImageChunk => c.type === 'image');

describe('qwen3_vl_instruct with an image', () => {
  it('renders the image between the vision markers, sized by the processor, with zero weight', async () => {
    const renderer = getRenderer('qwen3_vl_instruct', tok, { imageProcessor: TINY_QWEN3_VL_IMAGE_PROCESSOR });
    const loaded = await loadMessageImages(conversation);
    const { modelInput, weights } = renderer.buildSupervisedExample(loaded, TrainOnWhat.LAST_ASSISTANT_MESSAGE);
    const [image] = images(modelInput.chunks);
    // 96×64 → smart_resize to 96×64 (multiples of 32) → 6×4 patches of 16 → 24 / merge² = 6.
    expect(image.expected_tokens).toBe(6);
    expect(image.format).toBe('jpeg');
    expect(Buffer.from(image.data, 'base64').subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    const at = modelInput.chunks.indexOf(image);
    const before = modelInput.chunks[at - 1];
    const after = modelInput.chunks[at + 1];
    expect(before.type === 'encoded_text' && before.tokens.slice(-1)).toEqual(enc('<|vision_start|>'));
    expect(after.type === 'encoded_text' && after.tokens.slice(0, 1)).toEqual(enc('<|vision_end|>'));
    expect(weights).toHaveLength(modelInputLength(modelInput));
    const imageStart = modelInput.chunks.slice(0, at).reduce((n, c) => n + (c.type === 'encoded_text' ? c.tokens.length : c.expected_tokens!), 0);
    expect(weights.slice(imageStart, imageStart + 6)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(weights.some((w) => w === 1)).toBe(true);
  });

  it('makes a datum whose targets are 0 under the image and whose input keeps the chunk', async () => {
    const renderer = getRenderer('qwen3_vl_instruct', tok, { imageProcessor: TINY_QWEN3_VL_IMAGE_PROCESSOR });
    const datum = conversationToDatum(await loadMessageImages(conversation), renderer, null, TrainOnWhat.LAST_ASSISTANT_MESSAGE);
    const n = modelInputLength(datum.model_input);
    expect(datum.loss_fn_inputs.target_tokens.data).toHaveLength(n);
    expect(datum.loss_fn_inputs.weights.data).toHaveLength(n);
    expect(images(datum.model_input.chunks)).toHaveLength(1);
  });

  it('puts the image into the generation prompt', async () => {
    const renderer = getRenderer('qwen3_vl_instruct', tok, { imageProcessor: TINY_QWEN3_VL_IMAGE_PROCESSOR });
    const prompt = renderer.buildGenerationPrompt(await loadMessageImages(conversation.slice(0, 1)));
    expect(images(prompt.chunks).map((c) => c.expected_tokens)).toEqual([6]);
    const last = prompt.chunks[prompt.chunks.length - 1];
    expect(last.type === 'encoded_text' && tok.decode(last.tokens)).toMatch(/<\|im_start\|>assistant\n$/);
  });

  it('gets the model’s image processor from rendererForModel', async () => {
    const { renderer } = await rendererForModel('tiny-qwen3-vl');
    expect(renderer.name).toBe('qwen3_vl_instruct');
    const prompt = renderer.buildGenerationPrompt(await loadMessageImages(conversation.slice(0, 1)));
    expect(images(prompt.chunks)[0].expected_tokens).toBe(6);
  });
});

describe('refusals name the part', () => {
  it('a text-only renderer refuses an image', () => {
    const renderer = getRenderer('qwen3', tok);
    expect(() => renderer.buildGenerationPrompt(conversation.slice(0, 1))).toThrow(RendererError);
    expect(() => renderer.buildGenerationPrompt(conversation.slice(0, 1))).toThrow(/qwen3 renders text only, but messages\[0\]\.content\[0\] is an image/);
  });

  it('an image not yet decoded', () => {
    const renderer = getRenderer('qwen3_vl_instruct', tok, { imageProcessor: TINY_QWEN3_VL_IMAGE_PROCESSOR });
    expect(() => renderer.buildSupervisedExample(conversation)).toThrow(/messages\[0\]\.content\[0\] is not loaded: .*loadMessageImages/);
  });

  it('a vision renderer without an image processor', async () => {
    const renderer = getRenderer('qwen3_vl_instruct', tok);
    const loaded = await loadMessageImages(conversation);
    expect(() => renderer.buildSupervisedExample(loaded)).toThrow(/needs an image processor to render the image at messages\[0\]\.content\[0\]/);
  });

  it('the caller’s part, also where the format inserts a system message of its own (Qwen3.8, Nemotron)', async () => {
    // 3000×10: Qwen's smart_resize refuses an aspect ratio over 200.
    const strip = new Uint8Array(await sharp({ create: { width: 3000, height: 10, channels: 3, background: '#000' } }).png().toBuffer());
    const convo = await loadMessageImages([{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image', image: strip }] }]);
    for (const name of ['qwen3_vl_instruct', 'qwen3_8_xhigh_reasoning', 'nemotron3_ultra']) {
      const renderer = getRenderer(name, tok, { imageProcessor: TINY_QWEN3_VL_IMAGE_PROCESSOR });
      expect(() => renderer.buildGenerationPrompt(convo), name).toThrow(/^messages\[0\]\.content\[1\]: .*aspect ratio must be smaller than 200/);
    }
    const textOnly = getRenderer('nemotron3', tok, { imageProcessor: TINY_QWEN3_VL_IMAGE_PROCESSOR });
    expect(() => textOnly.buildSupervisedExample(convo)).toThrow(/nemotron3 renders text only, but messages\[0\]\.content\[1\] is an image/);
  });

  it('an undecodable image names the message and part', async () => {
    const bad: Message[] = [{ role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image', image: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]) }] }];
    await expect(loadMessageImages(bad, 'train.jsonl:3')).rejects.toThrow(/train\.jsonl:3 messages\[0\]\.content\[1\]/);
  });
});
