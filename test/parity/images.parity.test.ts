// Image chunks beside the reference's `image_to_chunk` (tinker-cookbook 0.6.1 renderers/base.py,
// PIL 13, transformers 5.23), run at test time by image_cases.py: for every image it generates (and
// a few written here with sharp: Display P3-tagged, Adam7-interlaced, palette) and every vision
// model of the model table, the same JPEG bytes and the same expected_tokens, or the same refusal;
// then the token counts of every model over thousands of sizes. Both sides read the processor
// configurations from one temporary hub cache that scripts/hf-image-processors.mjs's writer fills
// (HF_HUB_CACHE, HF_HUB_OFFLINE=1 for the reference; loadImageProcessor's cacheDir here).
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { imageChunkFor } from '../../src/cookbook/images/chunk.js';
import { ImageError } from '../../src/cookbook/images/errors.js';
import { writeImageProcessorConfigs } from '../../src/cookbook/images/hf-cache.js';
import { loadImage } from '../../src/cookbook/images/load.js';
import { loadImageProcessor, takesImageProcessor } from '../../src/cookbook/images/processors.js';
import type { DecodedImage, ImageProcessor } from '../../src/cookbook/images/types.js';
import { SERVED_MODELS } from '../../src/cookbook/model-info.js';
import { runPythonScript } from './reference.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const tmp = mkdtempSync(path.join(tmpdir(), 'images-parity-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const cacheDir = path.join(tmp, 'hub');
const imagesDir = path.join(tmp, 'images');
mkdirSync(imagesDir);

const MODELS = [...SERVED_MODELS.filter((m) => m.isVl && takesImageProcessor(m.name)).map((m) => m.name), 'tiny-qwen3-vl'];
const written = writeImageProcessorConfigs(cacheDir);

// Images with what PIL's writer cannot make: an embedded RGB profile (sharp would convert the
// pixels to sRGB unless told to ignore it; PIL never does), Adam7 interlacing, libimagequant's palette.
const gradient = (w: number, h: number) => {
  const px = Buffer.alloc(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) for (let c = 0; c < 3; c++) px[(y * w + x) * 3 + c] = (x * 7 + y * 3 + c * 50 + ((x * y) % 37)) & 255;
  return sharp(px, { raw: { width: w, height: h, channels: 3 } });
};
await gradient(90, 70).withIccProfile('p3').png().toFile(path.join(imagesDir, 'sharp_p3.png'));
await gradient(90, 70).withIccProfile('p3').jpeg({ quality: 88 }).toFile(path.join(imagesDir, 'sharp_p3.jpg'));
await gradient(97, 61).png({ progressive: true }).toFile(path.join(imagesDir, 'sharp_adam7.png'));
await gradient(97, 61).png({ palette: true, colours: 40, dither: 0 }).toFile(path.join(imagesDir, 'sharp_palette.png'));

/** Sizes for the counts: every pair of edge values (multiples of 14, 16, 28, 32 and either side of them, the pixel caps' sides) and seeded random ones. */
function sizes(): Array<[number, number]> {
  const edges = [
    1, 2, 3, 5, 7, 8, 13, 14, 15, 16, 17, 27, 28, 29, 31, 32, 33, 48, 55, 56, 57, 63, 64, 65, 100, 111, 127, 128, 129, 200, 223, 224,
    225, 255, 256, 257, 300, 447, 448, 449, 511, 512, 513, 640, 1000, 1023, 1024, 1025, 1280, 1920, 2047, 2048, 2049, 3000, 4000,
    4095, 4096, 4097, 5000, 7167, 7168, 7169, 8192, 10000, 14336, 20000,
  ];
  const out: Array<[number, number]> = [];
  for (const w of edges) for (const h of edges) out.push([w, h]);
  let seed = 12345;
  const next = (max: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return 1 + ((seed >>> 8) % max);
  };
  for (let i = 0; i < 1500; i++) out.push([next(12000), next(12000)]);
  for (let i = 0; i < 1000; i++) out.push([next(600), next(600)]);
  for (const k of [1, 2, 3, 5, 10, 50]) out.push([200 * k, k], [200 * k + 1, k], [k, 200 * k], [k, 200 * k + 1]);
  return out;
}
const SIZES = sizes();

type Attempt<T> = { ok: T } | { error: string; message: string };
interface Reference {
  processors: Record<string, { via: string; load_error?: string }>;
  images: Record<string, { mode?: string; sha256?: string; error?: string; message?: string }>;
  chunks: Record<string, Record<string, Attempt<number>>>;
  counts: Record<string, Array<number | null>>;
  refusals: Record<string, string>;
}

const { python } = await ensureReferenceEnv({ log: () => {} });
const run = await runPythonScript(python, [path.join(here, 'image_cases.py')], {
  env: { ...process.env, HF_HUB_CACHE: cacheDir, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1' },
  input: JSON.stringify({ dir: imagesDir, models: MODELS, sizes: SIZES }),
});
if (run.status !== 0) throw new Error(`image_cases.py failed (${run.status}):\n${run.stderr.slice(-5000)}`);
const ref = JSON.parse(run.stdout) as Reference;

const processors = new Map<string, ImageProcessor>(MODELS.map((m) => [m, loadImageProcessor(m, { cacheDir })]));
const IMAGES = Object.keys(ref.chunks);

/** Where this project knowingly parts from the reference, and why. */
const DIVERGENCES: Record<string, RegExp> = {
  // The reference sends a CMYK JPEG, which this project refuses rather than send (sharp has no CMYK JPEG encoder like PIL's).
  'cmyk.jpg': /CMYK JPEG is not supported/,
};

describe('image parity: the cache and the processors', () => {
  it('the cache writer covers every vision model of the model table', () => {
    expect(written.map((w) => w.model).sort()).toEqual(MODELS.filter((m) => m !== 'tiny-qwen3-vl').sort());
    expect(written.every((w) => w.action === 'written')).toBe(true);
    expect(writeImageProcessorConfigs(cacheDir).every((w) => w.action === 'kept')).toBe(true);
  });

  it('the reference loads the Qwen processors itself; Kimi and Nemotron it cannot offline (stated, then assembled from transformers code)', () => {
    for (const model of MODELS) {
      const p = ref.processors[model];
      if (model.startsWith('Qwen/')) expect(p, model).toEqual({ via: 'get_image_processor: Qwen2VLImageProcessorPil' });
      else if (model.startsWith('moonshotai/')) expect(p.load_error, model).toMatch(/^OSError/);
      else if (model.startsWith('nvidia/')) expect(p.load_error, model).toMatch(/NemotronH_Omni_Reasoning_V3ImageProcessor. None of these classes could be imported/);
    }
  });
});

describe('image parity: chunks (JPEG bytes and expected_tokens) for every image and vision model', () => {
  const decoded = new Map<string, Promise<DecodedImage | Error>>();
  const ours = (name: string) => {
    if (!decoded.has(name)) decoded.set(name, loadImage(path.join(imagesDir, name), name).catch((e: Error) => e));
    return decoded.get(name)!;
  };

  it('covers the kinds it means to', () => {
    expect(IMAGES.length).toBeGreaterThan(60);
    const modes = new Set(Object.values(ref.images).map((i) => i.mode));
    for (const mode of ['1', 'L', 'LA', 'P', 'RGB', 'RGBA', 'I;16', 'CMYK']) expect(modes, mode).toContain(mode);
  });

  it.each(IMAGES)('%s', async (name) => {
    const image = await ours(name);
    const refImage = ref.images[name];
    const refChunks = ref.chunks[name];
    const refOk = Object.values(refChunks).some((c) => 'ok' in c);
    if (DIVERGENCES[name]) {
      expect(refOk).toBe(true);
      expect(image).toBeInstanceOf(ImageError);
      expect((image as Error).message).toMatch(DIVERGENCES[name]);
      return;
    }
    if (!refOk) {
      // PIL refuses it (cannot identify it, truncated, a mode it cannot write): so does loadImage, naming the part.
      expect(image, `${name}: the reference refuses it (${Object.values(refChunks)[0] && JSON.stringify(Object.values(refChunks)[0])})`).toBeInstanceOf(ImageError);
      expect((image as Error).message.startsWith(`${name}: `)).toBe(true);
      return;
    }
    if (image instanceof Error) throw image;
    const refBytes = readFileSync(path.join(imagesDir, `${name}.ref.jpg`));
    const mine = Buffer.from(image.jpeg);
    if (!mine.equals(refBytes)) {
      let at = 0;
      while (at < mine.length && mine[at] === refBytes[at]) at++;
      expect.fail(`${name} (PIL mode ${refImage.mode}): JPEG bytes differ from offset ${at} (${mine.length} vs ${refBytes.length} bytes)`);
    }
    for (const model of MODELS) {
      const refChunk = refChunks[model];
      let mineChunk: Attempt<number>;
      try {
        const chunk = imageChunkFor(image, processors.get(model)!, name);
        expect(chunk.data).toBe(refBytes.toString('base64'));
        mineChunk = { ok: chunk.expected_tokens! };
      } catch (e) {
        if (!(e instanceof ImageError)) throw e;
        mineChunk = { error: 'ImageError', message: e.message };
      }
      expect('ok' in mineChunk ? mineChunk.ok : 'refused', `${name} for ${model}`).toEqual('ok' in refChunk ? refChunk.ok : 'refused');
    }
  });
});

describe('image parity: token counts over sizes', () => {
  it.each(MODELS)('%s', (model) => {
    const p = processors.get(model)!;
    const refCounts = ref.counts[model];
    const mismatches: string[] = [];
    let firstRefusal: string | undefined;
    SIZES.forEach(([w, h], i) => {
      let mine: number | 'refused';
      try {
        mine = p.numImageTokens(w, h);
      } catch (e) {
        if (!(e instanceof ImageError)) throw e;
        mine = 'refused';
        firstRefusal ??= e.message;
      }
      const theirs = refCounts[i] ?? 'refused';
      if (mine !== theirs && mismatches.length < 10) mismatches.push(`${w}×${h}: ours ${mine}, reference ${theirs}`);
    });
    expect(mismatches).toEqual([]);
    // The reference's refusal (Qwen's smart_resize: an aspect ratio over 200) is quoted in ours.
    const refusal = ref.refusals[model];
    if (refusal) expect(firstRefusal).toContain(refusal.replace(/^\d+x\d+: ValueError: /, ''));
    else expect(firstRefusal).toBeUndefined();
  });
});
