// loadImage's sources and refusals, the processors' counts on known sizes, loadImageProcessor's
// hub-cache resolution and the cache writer (the byte and count parity with the reference is
// test/parity/images.parity.test.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { imageChunkFor } from '../../src/cookbook/images/chunk.js';
import { ImageError } from '../../src/cookbook/images/errors.js';
import { writeImageProcessorConfigs } from '../../src/cookbook/images/hf-cache.js';
import { MAX_IMAGE_PIXELS, checkImageSize, loadImage } from '../../src/cookbook/images/load.js';
import {
  KimiK25ImageProcessor,
  NemotronVLImageProcessor,
  PINNED_REVISIONS,
  Qwen2VLImageProcessor,
  TINY_QWEN3_VL_IMAGE_PROCESSOR,
  loadImageProcessor,
  pyRound,
} from '../../src/cookbook/images/processors.js';
import { ConfigurationError, DataError } from '../../src/cookbook/errors.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'images-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const file = (name: string, bytes: Uint8Array) => {
  const p = path.join(tmp, name);
  writeFileSync(p, bytes);
  return p;
};

const pixels = (w: number, h: number, channels: 1 | 3 | 4 = 3) => {
  const px = Buffer.alloc(w * h * channels);
  for (let i = 0; i < px.length; i++) px[i] = (i * 31 + (i >> 7)) & 255;
  return sharp(px, { raw: { width: w, height: h, channels } });
};
const png = await pixels(64, 48).png().toBuffer();
const jpeg = await pixels(64, 48).jpeg().toBuffer();
const webp = await pixels(64, 48).webp().toBuffer();
const gif = await pixels(64, 48).gif().toBuffer();

/** A PNG of just its header chunks (no pixel data): enough for the size checks. */
function pngHeaderOnly(width: number, height: number): Uint8Array {
  const chunk = (type: string, data: Buffer) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, 'latin1');
    data.copy(out, 8);
    out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  return Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.alloc(16))), chunk('IEND', Buffer.alloc(0))]);
}

async function refusal(source: string | Uint8Array, where = 'messages[0].content[1]'): Promise<ImageError> {
  const e = await loadImage(source, where).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ImageError);
  expect(e).toBeInstanceOf(DataError);
  expect((e as ImageError).message.startsWith(`${where}: `)).toBe(true);
  return e as ImageError;
}

describe('loadImage: sources', () => {
  it('reads a path, a file:// URL (with or without localhost, percent-encoded), a data: URL (base64 or percent-encoded) and bytes alike', async () => {
    const p = file('with space é.png', png);
    const fromPath = await loadImage(p, 'x');
    expect(fromPath).toMatchObject({ type: 'decoded_image', width: 64, height: 48 });
    expect(Buffer.from(fromPath.jpeg.subarray(0, 20)).toString('hex')).toBe('ffd8ffe000104a46494600010100000100010000');
    const encoded = encodeURI(p);
    for (const source of [`file://${encoded}`, `file://localhost${encoded}`, `FILE:${encoded}`, png, `data:image/png;base64,${png.toString('base64')}`]) {
      expect((await loadImage(source, 'x')).jpeg, String(source).slice(0, 40)).toEqual(fromPath.jpeg);
    }
    const percent = `data:image/png,${[...png].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')}`;
    expect((await loadImage(percent, 'x')).jpeg).toEqual(fromPath.jpeg);
    // The media type is not trusted (PIL sniffs the bytes too); base64 may be wrapped.
    const wrapped = png.toString('base64').replace(/(.{76})/g, '$1\n');
    expect((await loadImage(`data:image/jpeg;base64,${encodeURIComponent(wrapped)}`, 'x')).jpeg).toEqual(fromPath.jpeg);
  });

  it('expands ~ as Python\'s expanduser does', async () => {
    const home = process.env.HOME;
    process.env.HOME = tmp;
    try {
      file('home.png', png);
      expect((await loadImage('~/home.png', 'x')).width).toBe(64);
    } finally {
      process.env.HOME = home;
    }
  });

  it('decodes JPEG, WebP and GIF', async () => {
    for (const bytes of [jpeg, webp, gif]) expect(await loadImage(bytes, 'x')).toMatchObject({ width: 64, height: 48 });
    const gray = await loadImage(await pixels(10, 10, 1).toColourspace('b-w').png().toBuffer(), 'x');
    // One component in the frame header: grayscale stays grayscale, as in PIL.
    const sof = Buffer.from(gray.jpeg).indexOf(Buffer.from([0xff, 0xc0]));
    expect(gray.jpeg[sof + 9]).toBe(1);
  });
});

describe('loadImage: refusals name the part', () => {
  it('refuses remote URLs, telling to materialize them', async () => {
    for (const url of ['http://example.com/a.png', 'https://example.com/a.png', 's3://bucket/a.png', 'gs://bucket/a.png', 'ftp://x/a.png']) {
      const e = await refusal(url);
      expect(e.message).toMatch(/does not fetch remote image URLs \(scheme "(http|https|s3|gs|ftp)"\); materialize/);
    }
    expect((await refusal('file://otherhost/tmp/a.png')).message).toMatch(/file:\/\/ URL on host "otherhost"/);
  });

  it('refuses a missing file, a folder and an empty source', async () => {
    expect((await refusal(path.join(tmp, 'nope.png'))).message).toContain(`no image file at ${path.join(tmp, 'nope.png')}`);
    expect((await refusal(`file://${tmp}/nope.png`)).message).toContain('no image file at');
    expect((await refusal(tmp)).message).toContain('is a directory');
    expect((await refusal('')).message).toContain('empty string');
    expect((await refusal(new Uint8Array(0))).message).toContain('empty (0 bytes)');
  });

  it('refuses malformed data: URLs', async () => {
    expect((await refusal('data:image/png;base64')).message).toContain('no "," before its data');
    expect((await refusal('data:image/png;base64,iVBORw0KGgo')).message).toContain('incorrect padding');
    expect((await refusal('data:image/png;base64,iVBORw0KG')).message).toContain('cannot be 1 more than a multiple of 4');
  });

  it('refuses bytes that are not an image, or of a format it does not take, listing the supported ones', async () => {
    expect((await refusal(Buffer.from('hello, not an image'))).message).toMatch(/not an image of a supported format \(supported: PNG, JPEG, WebP, GIF\): its bytes start 68656c6c6f/);
    const tiff = await pixels(8, 8).tiff().toBuffer();
    expect((await refusal(tiff)).message).toContain('TIFF images are not supported (supported: PNG, JPEG, WebP, GIF)');
    expect((await refusal(Buffer.from('BM\x00\x00'))).message).toContain('BMP images are not supported');
    expect((await refusal(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))).message).toContain('SVG images are not supported');
    const avif = await pixels(8, 8).avif().toBuffer();
    expect((await refusal(avif)).message).toContain('AVIF images are not supported');
  });

  it('refuses truncated and corrupt images rather than decode part of them', async () => {
    for (const [kind, bytes] of [['PNG', png], ['JPEG', jpeg], ['WebP', webp], ['GIF', gif]] as const) {
      const cut = bytes.subarray(0, Math.floor(bytes.length * 0.8));
      expect((await refusal(cut)).message, kind).toMatch(new RegExp(`cannot decode the ${kind} image`));
    }
    const broken = Buffer.from(png);
    const idat = broken.indexOf('IDAT');
    broken.fill(0x5a, idat + 10, idat + 40); // inside the compressed data
    expect((await refusal(broken)).message).toMatch(/cannot decode the PNG image, which is truncated or corrupt/);
    // PIL checks the checksums of the chunks before the image data.
    const badChecksum = Buffer.from(png);
    badChecksum[8 + 8 + 13] ^= 1; // IHDR's
    expect((await refusal(badChecksum)).message).toContain('its "IHDR" chunk has a wrong checksum');
  });

  it('refuses images over the pixel cap (PIL MAX_IMAGE_PIXELS × 2) before decoding them', async () => {
    expect(MAX_IMAGE_PIXELS).toBe(178_956_970);
    expect(() => checkImageSize(10, 17_895_697, 'x')).not.toThrow(); // exactly the cap: PIL opens it
    expect(() => checkImageSize(10, 17_895_698, 'x')).toThrow(/over the cap of 178956970/);
    const e = await refusal(pngHeaderOnly(13_380, 13_380));
    expect(e.message).toContain('13380×13380 = 179024400 pixels, over the cap of 178956970');
  });

  it('refuses what PIL cannot write as JPEG (16-bit grayscale) and CMYK JPEGs', async () => {
    const gray16 = await sharp(Buffer.alloc(16 * 16 * 2, 7), { raw: { width: 16, height: 16, channels: 1 } })
      .toColourspace('grey16')
      .png()
      .toBuffer();
    expect((await refusal(gray16)).message).toContain('16-bit grayscale PNG is not supported');
    const cmyk = await pixels(16, 16).toColourspace('cmyk').jpeg().toBuffer();
    expect((await refusal(cmyk)).message).toContain('CMYK JPEG is not supported');
  });
});

describe('processors', () => {
  it("rounds as Python's round() does (half to even)", () => {
    expect([0.5, 1.5, 2.5, 3.5, 2.4999999, 2.5000001, 7].map(pyRound)).toEqual([0, 2, 2, 4, 2, 3, 7]);
  });

  it('counts the reference numbers for known sizes', () => {
    const qwen3vl = new Qwen2VLImageProcessor('qwen', { patchSize: 16, minPixels: 65536, maxPixels: 16777216 });
    expect(qwen3vl.numImageTokens(640, 480)).toBe(300);
    expect(qwen3vl.numImageTokens(4000, 3000)).toBe(11750);
    expect(qwen3vl.numImageTokens(1, 1)).toBe(64);
    const kimi = new KimiK25ImageProcessor('kimi');
    expect([kimi.numImageTokens(640, 480), kimi.numImageTokens(4000, 3000), kimi.numImageTokens(1, 300)]).toEqual([414, 4200, 11]);
    const nemotron = new NemotronVLImageProcessor('nemotron');
    expect([nemotron.numImageTokens(640, 480), nemotron.numImageTokens(4000, 3000), nemotron.numImageTokens(1, 300)]).toEqual([300, 3300, 280]);
    expect(TINY_QWEN3_VL_IMAGE_PROCESSOR.numImageTokens(640, 480)).toBe(12);
    expect(TINY_QWEN3_VL_IMAGE_PROCESSOR.config).toEqual({ patchSize: 16, mergeSize: 2, temporalPatchSize: 2, minPixels: 1024, maxPixels: 16384 });
  });

  it("refuses Qwen's aspect ratios over 200, and imageChunkFor names the part", async () => {
    const image = await loadImage(await pixels(300, 1).png().toBuffer(), 'x');
    expect(() => imageChunkFor(image, TINY_QWEN3_VL_IMAGE_PROCESSOR, 'messages[1].content[0]')).toThrow(
      /^messages\[1\]\.content\[0\]: tiny-qwen3-vl cannot take it: absolute aspect ratio must be smaller than 200, got 300\.0$/,
    );
    const chunk = imageChunkFor(await loadImage(png, 'x'), TINY_QWEN3_VL_IMAGE_PROCESSOR);
    expect(chunk).toMatchObject({ type: 'image', format: 'jpeg', expected_tokens: 4 }); // 64×48 → 64×64: 4×4 patches, merged 2×2
    expect(Buffer.from(chunk.data, 'base64').subarray(0, 2).toString('hex')).toBe('ffd8');
  });
});

describe('loadImageProcessor', () => {
  const cache = path.join(tmp, 'hub');
  writeImageProcessorConfigs(cache);

  it('reads every vision model from the cache the writer filled, the engine model built in', () => {
    expect(loadImageProcessor('Qwen/Qwen3-VL-30B-A3B-Instruct', { cacheDir: cache })).toBeInstanceOf(Qwen2VLImageProcessor);
    expect(loadImageProcessor('Qwen/Qwen3.5-4B:peft:262144', { cacheDir: cache }).numImageTokens(640, 480)).toBe(300);
    const kimi = loadImageProcessor('moonshotai/Kimi-K2.6', { cacheDir: cache }) as KimiK25ImageProcessor;
    expect(kimi.config).toEqual({ patchSize: 14, mergeSize: 2, maxPatches: 16384, maxPatchesPerSide: 512, fixedOutputTokens: null });
    expect(loadImageProcessor('nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16', { cacheDir: cache })).toBeInstanceOf(NemotronVLImageProcessor);
    expect(loadImageProcessor('tiny-qwen3-vl')).toBe(TINY_QWEN3_VL_IMAGE_PROCESSOR);
    // From the environment, as huggingface_hub finds its cache.
    expect(loadImageProcessor('Qwen/Qwen3.6-27B', { env: { HF_HUB_CACHE: cache } })).toBeInstanceOf(Qwen2VLImageProcessor);
    expect(loadImageProcessor('Qwen/Qwen3.6-27B', { env: { HF_HOME: path.join(tmp, 'home-hf') }, cacheDir: cache })).toBeInstanceOf(Qwen2VLImageProcessor);
  });

  it('names the model and the path it looked at when the configuration is missing', () => {
    const empty = path.join(tmp, 'empty-hub');
    expect(() => loadImageProcessor('Qwen/Qwen3.5-4B', { cacheDir: empty })).toThrow(
      new RegExp(`no image processor configuration for Qwen/Qwen3.5-4B in the Hugging Face cache ${empty}: .*models--Qwen--Qwen3.5-4B/refs/main does not exist`),
    );
    expect(() => loadImageProcessor('Qwen/Qwen3.5-4B', { env: { HF_HOME: path.join(tmp, 'hf-home') } })).toThrow(path.join(tmp, 'hf-home', 'hub'));
    // A snapshot without the file.
    const repo = path.join(empty, 'models--Qwen--Qwen3.5-4B');
    mkdirSync(path.join(repo, 'refs'), { recursive: true });
    writeFileSync(path.join(repo, 'refs', 'main'), 'a'.repeat(40));
    expect(() => loadImageProcessor('Qwen/Qwen3.5-4B', { cacheDir: empty })).toThrow(`${path.join(repo, 'snapshots', 'a'.repeat(40), 'preprocessor_config.json')} does not exist`);
    expect(() => loadImageProcessor('thinkingmachines/Inkling', { cacheDir: cache })).toThrow(ConfigurationError);
    expect(() => loadImageProcessor('moonshotai/Kimi-K3.1-Pro', { cacheDir: cache })).toThrow(/takes no image processor/);
  });

  it('resolves refs as huggingface_hub does: the pinned commit for Kimi and Nemotron, processor_config.json first', () => {
    const hub = path.join(tmp, 'hub2');
    const put = (model: string, commit: string, name: string, json: unknown) => {
      const snap = path.join(hub, `models--${model.replace('/', '--')}`, 'snapshots', commit);
      mkdirSync(snap, { recursive: true });
      writeFileSync(path.join(snap, name), JSON.stringify(json));
    };
    const other = 'b'.repeat(40);
    put('moonshotai/Kimi-K2.5', other, 'preprocessor_config.json', { media_proc_cfg: { in_patch_limit: 4096 } });
    put('moonshotai/Kimi-K2.5', PINNED_REVISIONS['moonshotai/Kimi-K2.5'], 'preprocessor_config.json', { media_proc_cfg: { in_patch_limit: 1024 } });
    mkdirSync(path.join(hub, 'models--moonshotai--Kimi-K2.5', 'refs'), { recursive: true });
    writeFileSync(path.join(hub, 'models--moonshotai--Kimi-K2.5', 'refs', 'main'), other);
    expect((loadImageProcessor('moonshotai/Kimi-K2.5', { cacheDir: hub }) as KimiK25ImageProcessor).config.maxPatches).toBe(1024);
    expect((loadImageProcessor('moonshotai/Kimi-K2.5', { cacheDir: hub, revision: 'main' }) as KimiK25ImageProcessor).config.maxPatches).toBe(4096);
    put('Qwen/Qwen3.5-9B', other, 'preprocessor_config.json', { image_processor_type: 'Qwen2VLImageProcessorFast', size: { shortest_edge: 1, longest_edge: 2 } });
    put('Qwen/Qwen3.5-9B', other, 'processor_config.json', { image_processor: { image_processor_type: 'Qwen2VLImageProcessor', size: { shortest_edge: 3136, longest_edge: 1003520 }, patch_size: 14 } });
    expect(() => loadImageProcessor('Qwen/Qwen3.5-9B', { cacheDir: hub, revision: other })).not.toThrow();
    expect((loadImageProcessor('Qwen/Qwen3.5-9B', { cacheDir: hub, revision: other }) as Qwen2VLImageProcessor).config).toMatchObject({ minPixels: 3136, maxPixels: 1003520, patchSize: 14 });
    // A local folder is read as it is; min_pixels / max_pixels override size, as in Qwen2VLImageProcessor.__init__.
    const local = path.join(tmp, 'local-model');
    mkdirSync(local);
    writeFileSync(path.join(local, 'preprocessor_config.json'), JSON.stringify({ image_processor_type: 'Qwen2VLImageProcessor', min_pixels: 100, max_pixels: 200 }));
    expect((loadImageProcessor(local) as Qwen2VLImageProcessor).config).toMatchObject({ minPixels: 100, maxPixels: 200, patchSize: 14 });
    writeFileSync(path.join(local, 'preprocessor_config.json'), JSON.stringify({ image_processor_type: 'SiglipImageProcessor' }));
    expect(() => loadImageProcessor(local)).toThrow(/SiglipImageProcessor, which this project does not count tokens for/);
  });
});

describe('the hub cache writer', () => {
  it('never replaces what a cache holds, and the script writes the same cache', () => {
    const hub = path.join(tmp, 'hub3');
    const repo = path.join(hub, 'models--Qwen--Qwen3-VL-30B-A3B-Instruct');
    const real = 'c'.repeat(40);
    mkdirSync(path.join(repo, 'refs'), { recursive: true });
    writeFileSync(path.join(repo, 'refs', 'main'), real);
    mkdirSync(path.join(repo, 'snapshots', real), { recursive: true });
    writeFileSync(path.join(repo, 'snapshots', real, 'preprocessor_config.json'), '{"mine": true}');
    const script = path.join(import.meta.dirname, '..', '..', 'scripts', 'hf-image-processors.mjs');
    const out = execFileSync(process.execPath, [script, hub], { encoding: 'utf8' });
    expect(out).toMatch(/^kept {4}Qwen\/Qwen3-VL-30B-A3B-Instruct /m);
    expect(out).toMatch(/^written moonshotai\/Kimi-K2.5 /m);
    expect(readFileSync(path.join(repo, 'snapshots', real, 'preprocessor_config.json'), 'utf8')).toBe('{"mine": true}');
    expect(readFileSync(path.join(repo, 'refs', 'main'), 'utf8')).toBe(real);
    const pinned = path.join(hub, 'models--moonshotai--Kimi-K2.5', 'snapshots', PINNED_REVISIONS['moonshotai/Kimi-K2.5'], 'preprocessor_config.json');
    expect(existsSync(pinned)).toBe(true);
    expect(writeImageProcessorConfigs(hub).every((w) => w.action === 'kept')).toBe(true);
  });
});
