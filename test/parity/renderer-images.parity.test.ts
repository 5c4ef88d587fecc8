// Renderer parity with images: every vision renderer of the reference (tinker-cookbook 0.6.1) renders
// conversations with image parts, run at test time by renderer_image_cases.py, and this project's
// renderer (getRenderer with the model's image processor) must give the same ModelInput: the
// supervised example's sequence and weights for several train_on_what values, and the generation
// prompt's sequence. A sequence is the ModelInput flattened: text chunks' tokens in order and each
// image chunk one element, {sha256 of the chunk's bytes, format, expected_tokens}; how the text
// around an image is split into chunks is not compared (it does not reach the model).
//
// Each renderer is paired with the model whose processor it serves and the tokenizer its text parity
// file uses (Qwen3's for Qwen3-VL, the stand-ins of tokenizers.ts for the others). The processors are
// read, on both sides, from one temporary hub cache filled by writeImageProcessorConfigs, as in
// images.parity.test.ts (whose image_cases.py loads them for the reference).
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import type { ModelInput } from '../../src/backends/types.js';
import { writeImageProcessorConfigs } from '../../src/cookbook/images/hf-cache.js';
import { loadImage } from '../../src/cookbook/images/load.js';
import { loadImageProcessor } from '../../src/cookbook/images/processors.js';
import type { DecodedImage, ImageProcessor } from '../../src/cookbook/images/types.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import type { Message, Renderer, TrainOnWhat } from '../../src/cookbook/renderers/types.js';
import { getTokenizer, shippedTokenizerDir, type Tokenizer } from '../../src/cookbook/tokenizer.js';
import { outcome, runPythonScript, sameOutcome, type Outcome } from './reference.js';
import { standInTokenizer } from './tokenizers.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const tmp = mkdtempSync(path.join(tmpdir(), 'renderer-images-parity-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const cacheDir = path.join(tmp, 'hub');
const imagesDir = path.join(tmp, 'images');
mkdirSync(imagesDir);
writeImageProcessorConfigs(cacheDir);

// ------------------------------------------------------------------------------------ the images

/** Deterministic pixels with some noise (so that JPEG has real work to do). */
function pixels(w: number, h: number, channels: number): Buffer {
  const px = Buffer.alloc(w * h * channels);
  let seed = w * 7919 + h;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      for (let c = 0; c < channels; c++) {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        const noise = (seed >>> 24) % 41;
        px[(y * w + x) * channels + c] = c === 3 ? (x * 255) / w : (x * 3 + y * 2 + c * 60 + noise) & 255;
      }
    }
  }
  return px;
}
const raw = (w: number, h: number, channels: 3 | 4) => sharp(pixels(w, h, channels), { raw: { width: w, height: h, channels } });

const IMAGES: Record<string, string> = {
  rgb: path.join(imagesDir, 'rgb_96x64.png'),
  rgba: path.join(imagesDir, 'rgba_300x40.png'),
  photo: path.join(imagesDir, 'photo_1000x700.jpg'),
};
await raw(96, 64, 3).png().toFile(IMAGES.rgb);
await raw(300, 40, 4).png().toFile(IMAGES.rgba);
await raw(1000, 700, 3).jpeg({ quality: 85 }).toFile(IMAGES.photo);

// ----------------------------------------------------------------------------- the conversations

const img = (name: keyof typeof IMAGES) => ({ type: 'image', image: name });
const txt = (text: string) => ({ type: 'text', text });
const think = (thinking: string) => ({ type: 'thinking', thinking });

/** Conversations with image parts (written by name: each side puts its own image in). */
const CONVERSATIONS: Record<string, unknown[]> = {
  // One image, then the question.
  single: [
    { role: 'user', content: [img('rgb'), txt('What is in this image?')] },
    { role: 'assistant', content: 'A small gradient.' },
  ],
  // Text before and after the image, with whitespace the Qwen3.5 family trims up to the image.
  text_around: [
    { role: 'user', content: [txt('  Look at this: '), img('photo'), txt(' and describe it.  ')] },
    { role: 'assistant', content: [think('It is a noisy photo.'), txt('A noisy photo.')] },
  ],
  // Two images in one message (Nemotron labels them `<image 1>`, `<image 2>`), back to back.
  two_images: [
    { role: 'user', content: [txt('Compare'), img('rgb'), img('rgba'), txt('Which is wider?')] },
    { role: 'assistant', content: 'The second.' },
  ],
  // An image and nothing else.
  image_only: [
    { role: 'user', content: [img('rgba')] },
    { role: 'assistant', content: 'A strip.' },
  ],
  // An image in the system message (Qwen3.8 prepends its reasoning instruction as a text part).
  system_image: [
    { role: 'system', content: [txt('Reference image:'), img('rgb')] },
    { role: 'user', content: [img('photo'), txt('Same as the reference?')] },
    { role: 'assistant', content: 'No.' },
  ],
  // The image in an earlier turn of a multi-turn conversation.
  multi_turn: [
    { role: 'user', content: [img('photo'), txt('What is it?')] },
    { role: 'assistant', content: [think('Mostly noise.'), txt('Noise.')] },
    { role: 'user', content: 'And its size?' },
    { role: 'assistant', content: 'About 1000 by 700.' },
  ],
  // A tool response with an image.
  tool_image: [
    { role: 'user', content: 'Take a screenshot.' },
    {
      role: 'assistant',
      content: [think('Use the tool.')],
      tool_calls: [{ type: 'function', id: 'functions.screenshot:0', function: { name: 'screenshot', arguments: '{}' } }],
    },
    { role: 'tool', content: [txt('Screenshot:'), img('rgba')], tool_call_id: 'functions.screenshot:0', name: 'screenshot' },
    { role: 'assistant', content: 'It shows a strip.' },
  ],
  // An image in an assistant message (Kimi's template keeps only an assistant message's text).
  assistant_image: [
    { role: 'user', content: 'Draw a square.' },
    { role: 'assistant', content: [txt('Here:'), img('rgb')] },
  ],
};

const TRAIN_ON_WHAT = ['last_assistant_message', 'all_user_and_system_messages', 'all_tokens'];

// ------------------------------------------------------------------------ renderers × processors

const qwen3 = { dir: shippedTokenizerDir('qwen3'), label: 'qwen3' };
const qwen35 = standInTokenizer('qwen3.5');
const nemotron = standInTokenizer('nemotron3');
const kimi = standInTokenizer('kimi');

interface Under {
  renderer: string;
  tokenizer: { dir: string; label: string };
  model: string;
}
const under = (renderers: string[], tokenizer: Under['tokenizer'], model: string): Under[] =>
  renderers.map((renderer) => ({ renderer, tokenizer, model }));

const NEMOTRON_SUPER_VL = 'nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16';
const UNDER: Under[] = [
  ...under(['qwen3_vl', 'qwen3_vl_instruct'], qwen3, 'Qwen/Qwen3-VL-30B-A3B-Instruct'),
  ...under(['qwen3_5', 'qwen3_5_disable_thinking', 'qwen3_5_preserve_thinking'], qwen35, 'Qwen/Qwen3.5-35B-A3B'),
  ...under(
    ['qwen3_8_xhigh_reasoning', 'qwen3_8_medium_reasoning', 'qwen3_8_low_reasoning', 'qwen3_8_disable_thinking'],
    qwen35,
    'Qwen/Qwen3.8-27B',
  ),
  ...under(
    ['nemotron3_ultra', 'nemotron3_ultra_disable_thinking', 'nemotron3_ultra_medium_thinking', 'nemotron3_ultra_preserve_thinking'],
    nemotron,
    NEMOTRON_SUPER_VL,
  ),
  // Nemotron-3 (Nano/Super) renderers are text-only: the reference's get_renderer gives them no
  // image processor, so an image is refused, whatever processor is passed.
  ...under(['nemotron3', 'nemotron3_low_thinking', 'nemotron3_disable_thinking', 'nemotron3_preserve_thinking'], nemotron, NEMOTRON_SUPER_VL),
  ...under(['kimi_k25', 'kimi_k25_disable_thinking'], kimi, 'moonshotai/Kimi-K2.5'),
  ...under(['kimi_k26', 'kimi_k26_disable_thinking', 'kimi_k26_preserve_thinking'], kimi, 'moonshotai/Kimi-K2.6'),
];
const TEXT_ONLY = new Set(['nemotron3', 'nemotron3_low_thinking', 'nemotron3_disable_thinking', 'nemotron3_preserve_thinking']);

// ------------------------------------------------------------------------------- the reference

type Element = number | { image: string; format: string; expected_tokens: number };
interface Rendered {
  sequence: Element[];
  weights?: number[];
  chunks?: Array<number | 'image'>;
}
interface Reference {
  processors: Record<string, { via: string; load_error?: string }>;
  results: Array<Array<{ id: string; expected: Outcome<Rendered> }>>;
}

const { python } = await ensureReferenceEnv({ log: () => {} });
const run = await runPythonScript(python, [path.join(here, 'renderer_image_cases.py')], {
  env: { ...process.env, HF_HUB_CACHE: cacheDir, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' },
  input: JSON.stringify({
    images: IMAGES,
    conversations: CONVERSATIONS,
    train_on_what: TRAIN_ON_WHAT,
    renderers: UNDER.map((u) => ({ renderer: u.renderer, tokenizer_dir: u.tokenizer.dir, model: u.model })),
  }),
});
if (run.status !== 0) throw new Error(`renderer_image_cases.py failed (${run.status}):\n${run.stderr.slice(-5000)}`);
const ref = JSON.parse(run.stdout) as Reference;

// -------------------------------------------------------------------------------------- ours

const decoded: Record<string, DecodedImage> = {};
for (const [name, file] of Object.entries(IMAGES)) decoded[name] = await loadImage(file, name);

const processors = new Map<string, ImageProcessor>();
const processorFor = (model: string) => {
  if (!processors.has(model)) processors.set(model, loadImageProcessor(model, { cacheDir }));
  return processors.get(model)!;
};

function messagesOf(conversation: unknown[]): Message[] {
  return (conversation as Message[]).map((m) =>
    typeof m.content === 'string'
      ? m
      : { ...m, content: m.content.map((p) => (p.type === 'image' ? { type: 'image', image: decoded[p.image as string] } : p)) },
  );
}

function flatten(mi: ModelInput): Rendered {
  const sequence: Element[] = [];
  const chunks: Array<number | 'image'> = [];
  for (const c of mi.chunks) {
    if (c.type === 'encoded_text') {
      sequence.push(...c.tokens);
      chunks.push(c.tokens.length);
    } else {
      const sha = createHash('sha256').update(Buffer.from(c.data, 'base64')).digest('hex');
      sequence.push({ image: sha, format: c.format, expected_tokens: c.expected_tokens! });
      chunks.push('image');
    }
  }
  return { sequence, chunks };
}

function runCase(renderer: Renderer, id: string): Outcome<Rendered> {
  const [kind, conversation, tow] = id.split('/');
  const messages = messagesOf(CONVERSATIONS[conversation]);
  return outcome((): Rendered => {
    if (kind === 'supervised') {
      const ex = renderer.buildSupervisedExample(messages, tow as TrainOnWhat);
      return { ...flatten(ex.modelInput), weights: ex.weights };
    }
    const prompt = messages[messages.length - 1].role === 'assistant' ? messages.slice(0, -1) : messages;
    return flatten(renderer.buildGenerationPrompt(prompt));
  });
}

/** What is compared: the sequence (and the weights), not how text is split into chunks. */
const compared = (o: Outcome<Rendered>) => ('ok' in o ? { ok: { sequence: o.ok.sequence, weights: o.ok.weights } } : o);

/** Where two outcomes part, in words (the sequences are long: the first difference and its surroundings). */
function difference(ours: Outcome<Rendered>, theirs: Outcome<Rendered>): string {
  if (!('ok' in ours) || !('ok' in theirs)) return `reference ${JSON.stringify(theirs).slice(0, 500)}; ours ${JSON.stringify(ours).slice(0, 500)}`;
  const show = (xs: unknown[] | undefined, at: number) => JSON.stringify(xs?.slice(Math.max(0, at - 8), at + 8));
  for (const key of ['sequence', 'weights'] as const) {
    const a = ours.ok[key] ?? [];
    const b = theirs.ok[key] ?? [];
    let at = 0;
    while (at < Math.max(a.length, b.length) && JSON.stringify(a[at]) === JSON.stringify(b[at])) at++;
    if (at < Math.max(a.length, b.length)) {
      return `${key} differs at ${at} (lengths ${a.length} ours, ${b.length} reference): ours ${show(a, at)}, reference ${show(b, at)}`;
    }
  }
  return 'equal';
}

const tokenizers = new Map<string, Promise<Tokenizer>>();
const tokenizerFor = (t: Under['tokenizer']) => {
  if (!tokenizers.has(t.dir)) tokenizers.set(t.dir, getTokenizer(`parity:images:${t.label}`, t.dir));
  return tokenizers.get(t.dir)!;
};

describe('renderer image parity: the reference', () => {
  it('loads the Qwen processors itself, and Kimi’s and Nemotron’s as image_cases.py assembles them', () => {
    for (const model of new Set(UNDER.map((u) => u.model))) {
      const via = ref.processors[model].via;
      if (model.startsWith('Qwen/')) expect(via, model).toBe('get_image_processor: Qwen2VLImageProcessorPil');
      else expect(via, model).toMatch(/Kimi_K25ImageProcessor|get_patch_grid_size/);
    }
  });

  it('renders images with every vision renderer, and refuses them with the text-only Nemotron-3 ones', () => {
    UNDER.forEach((u, i) => {
      const cases = ref.results[i];
      const ok = cases.filter((c) => 'ok' in c.expected);
      const images = ok.flatMap((c) => ('ok' in c.expected ? c.expected.ok.sequence.filter((e) => typeof e !== 'number') : []));
      if (TEXT_ONLY.has(u.renderer)) {
        // What renders has no image (a generation prompt that drops the last, assistant, message).
        expect(images, u.renderer).toEqual([]);
        expect(ok.length, u.renderer).toBeLessThan(cases.length / 4);
      } else {
        // Every image, at its own size: the 1000×700 photo costs more tokens than the 96×64 one.
        expect(new Set(images.map((e) => (e as { expected_tokens: number }).expected_tokens)).size, u.renderer).toBe(Object.keys(IMAGES).length);
        expect(ok.length, `${u.renderer}: cases the reference renders`).toBeGreaterThan(cases.length / 2);
        expect(new Set(images.map((e) => (e as { image: string }).image)).size, u.renderer).toBe(Object.keys(IMAGES).length);
      }
    });
  });
});

describe('renderer image parity: the text-only Nemotron-3 renderers', () => {
  it.each([...TEXT_ONLY])('%s refuses an image even when given a processor, naming the part', async (name) => {
    const renderer = getRenderer(name, await tokenizerFor(nemotron), { imageProcessor: processorFor(NEMOTRON_SUPER_VL) });
    expect(renderer.takesImages).toBe(false);
    expect(() => renderer.buildGenerationPrompt(messagesOf(CONVERSATIONS.single).slice(0, 1))).toThrow(
      /renders text only, but messages\[0\]\.content\[0\] is an image/,
    );
  });
});

describe.each(UNDER.map((u, i) => [`${u.renderer} × ${u.tokenizer.label} × ${u.model}`, u, ref.results[i]] as const))(
  'renderer images %s',
  (label, u, cases) => {
    it.each(cases.map((c) => [c.id, c] as const))('%s', async (id, c) => {
      const tokenizer = await tokenizerFor(u.tokenizer);
      const renderer = getRenderer(u.renderer, tokenizer, { imageProcessor: processorFor(u.model) });
      const ours = runCase(renderer, id);
      const { ts, ref: theirs } = sameOutcome(compared(ours), compared(c.expected));
      expect(ts, `${label} ${id}: ${difference(ours, c.expected)}`).toEqual(theirs);
    });
  },
);
