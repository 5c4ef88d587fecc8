// What PIL's `Image.open` learns from an image's header before decoding it, read here from the
// bytes: the format, the size, the mode PIL would open it in (which decides what the reference's
// `image_to_chunk` writes: RGBA/LA/P become RGB, L stays grayscale, a 16-bit grayscale PNG or a
// CMYK JPEG is not converted at all), and the comment PIL would copy into the JPEG it saves
// (`JpegImagePlugin._save` writes `im.info["comment"]` as a COM segment). GIFs are decoded here too,
// since PIL's first-frame semantics (palette indices, the transparent index's own colour, a canvas
// filled with index 0 or the transparent index) are not what a compositing decoder returns.

import { inflateSync } from 'node:zlib';

export type ImageFormat = 'PNG' | 'JPEG' | 'WebP' | 'GIF';

/** The formats `loadImage` decodes (GIF: its first frame, as PIL opens it). */
export const SUPPORTED_IMAGE_FORMATS: readonly ImageFormat[] = ['PNG', 'JPEG', 'WebP', 'GIF'];

/** PIL's mode after `Image.open` (the ones these formats produce). */
export type PilMode = '1' | 'L' | 'LA' | 'P' | 'RGB' | 'RGBA' | 'I;16' | 'CMYK';

export interface ImageHeader {
  format: ImageFormat;
  width: number;
  height: number;
  mode: PilMode;
  /** `im.info["comment"]` as the JPEG encoder receives it (bytes, or a str's UTF-8), if any. */
  comment?: Uint8Array;
}

/** Thrown by the parsers: what is wrong with the bytes (the caller adds where they came from). */
export class FormatError extends Error {}

const latin1 = (b: Uint8Array) => Buffer.from(b).toString('latin1');
const u16be = (b: Uint8Array, o: number) => (b[o] << 8) | b[o + 1];
const u16le = (b: Uint8Array, o: number) => b[o] | (b[o + 1] << 8);
const u24le = (b: Uint8Array, o: number) => b[o] | (b[o + 1] << 8) | (b[o + 2] << 16);
const u32be = (b: Uint8Array, o: number) => ((b[o] << 24) >>> 0) + ((b[o + 1] << 16) | (b[o + 2] << 8) | b[o + 3]);

const startsWith = (b: Uint8Array, sig: number[], at = 0) => b.length >= at + sig.length && sig.every((x, i) => b[at + i] === x);
const ascii = (b: Uint8Array, at: number, s: string) => b.length >= at + s.length && latin1(b.subarray(at, at + s.length)) === s;

/** The format of these bytes, or a name for one this loader does not take (for the message). */
export function sniffFormat(b: Uint8Array): ImageFormat | { unsupported: string } {
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'PNG';
  if (startsWith(b, [0xff, 0xd8, 0xff])) return 'JPEG';
  if (ascii(b, 0, 'GIF87a') || ascii(b, 0, 'GIF89a')) return 'GIF';
  if (ascii(b, 0, 'RIFF') && ascii(b, 8, 'WEBP')) return 'WebP';
  if (ascii(b, 0, 'BM')) return { unsupported: 'BMP' };
  if (startsWith(b, [0x49, 0x49, 0x2a, 0x00]) || startsWith(b, [0x4d, 0x4d, 0x00, 0x2a])) return { unsupported: 'TIFF' };
  if (ascii(b, 4, 'ftyp')) {
    const brand = latin1(b.subarray(8, 12));
    return { unsupported: /^avi[fs]$/.test(brand) ? 'AVIF' : /^(heic|heix|hevc|hevx|mif1|msf1)$/.test(brand) ? 'HEIF' : `ISO media (${brand.trim()})` };
  }
  if (startsWith(b, [0x00, 0x00, 0x01, 0x00])) return { unsupported: 'ICO' };
  if (ascii(b, 0, '8BPS')) return { unsupported: 'PSD' };
  if (startsWith(b, [0xff, 0x0a]) || startsWith(b, [0x00, 0x00, 0x00, 0x0c, 0x4a, 0x58, 0x4c, 0x20])) return { unsupported: 'JPEG XL' };
  if (startsWith(b, [0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20]) || startsWith(b, [0xff, 0x4f, 0xff, 0x51])) return { unsupported: 'JPEG 2000' };
  if (ascii(b, 0, '%PDF')) return { unsupported: 'PDF' };
  const head = latin1(b.subarray(0, 256)).trimStart();
  if (/^(<\?xml|<svg|<!DOCTYPE svg)/i.test(head)) return { unsupported: 'SVG' };
  return { unsupported: '' };
}

// ------------------------------------------------------------------------------------------ PNG

/** PIL's PngImagePlugin `_MODES`: (bit depth, colour type) → mode. */
function pngMode(depth: number, colourType: number): PilMode {
  const key = `${depth}/${colourType}`;
  const modes: Record<string, PilMode> = {
    '1/0': '1', '2/0': 'L', '4/0': 'L', '8/0': 'L', '16/0': 'I;16',
    '8/2': 'RGB', '16/2': 'RGB',
    '1/3': 'P', '2/3': 'P', '4/3': 'P', '8/3': 'P',
    '8/4': 'LA', '16/4': 'RGBA', // PIL opens 16-bit gray+alpha as RGBA ("LA;16B")
    '8/6': 'RGBA', '16/6': 'RGBA',
  };
  const mode = modes[key];
  if (!mode) throw new FormatError(`a PNG with bit depth ${depth} and colour type ${colourType} is not valid`);
  return mode;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 of a PNG chunk's type and data. */
function chunkCrc(b: Uint8Array, typeAt: number, length: number): number {
  let c = 0xffffffff;
  for (let i = typeAt, end = typeAt + 4 + length; i < end; i++) c = CRC_TABLE[(c ^ b[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * PNG bytes as PIL reads them, for a decoder that checks every checksum: PIL checks those of the
 * chunks before the image data (a mismatch is an error, see pngHeader) and none after, so from the
 * first IDAT on, wrong checksums are recomputed (on a copy) rather than refused.
 */
export function pngWithPilChecksums(b: Uint8Array): Uint8Array {
  let out = b;
  let at = 8;
  let data = false;
  while (at + 12 <= b.length) {
    const length = u32be(b, at);
    if (at + 12 + length > b.length) break;
    const type = latin1(b.subarray(at + 4, at + 8));
    data ||= type === 'IDAT';
    if (data) {
      const crc = chunkCrc(b, at + 4, length);
      if (u32be(b, at + 8 + length) !== crc) {
        if (out === b) out = new Uint8Array(b);
        new DataView(out.buffer, out.byteOffset).setUint32(at + 8 + length, crc);
      }
    }
    if (type === 'IEND') break;
    at += 12 + length;
  }
  return out;
}

/**
 * PNG: IHDR, and the last text chunk keyed "comment" (tEXt latin-1, zTXt, iTXt UTF-8), which
 * PIL keeps in `info` as a str and the JPEG encoder writes UTF-8 encoded. Like PIL, the text of an
 * APNG is read up to its second frame, and the chunks before the image data must have the right
 * checksums.
 */
function pngHeader(b: Uint8Array): ImageHeader {
  let at = 8;
  let header: ImageHeader | undefined;
  let comment: string | undefined;
  let animated = false;
  let seenIdat = false;
  while (at + 8 <= b.length) {
    const length = u32be(b, at);
    const type = latin1(b.subarray(at + 4, at + 8));
    const data = b.subarray(at + 8, at + 8 + length);
    if (data.length < length) break; // truncated: the decoder reports it
    if (type === 'IDAT') seenIdat = true;
    if (!seenIdat) {
      if (at + 12 + length > b.length) throw new FormatError(`the PNG ends inside its ${type} chunk (truncated)`);
      if (u32be(b, at + 8 + length) !== chunkCrc(b, at + 4, length)) {
        throw new FormatError(`its ${JSON.stringify(type)} chunk has a wrong checksum (PIL: "broken PNG file")`);
      }
    }
    if (!header) {
      if (type !== 'IHDR' || length < 13) throw new FormatError('a PNG must start with its IHDR chunk');
      header = { format: 'PNG', width: u32be(data, 0), height: u32be(data, 4), mode: pngMode(data[8], data[9]) };
    } else if (type === 'IEND') {
      break;
    } else if (type === 'acTL') {
      animated = true;
    } else if (type === 'fcTL' && animated && seenIdat) {
      break;
    } else if (type === 'tEXt' || type === 'zTXt' || type === 'iTXt') {
      const text = pngText(type, data);
      if (text && text[0] === 'comment') comment = text[1];
    }
    at += 12 + length;
  }
  if (!header) throw new FormatError('a PNG must start with its IHDR chunk');
  if (comment !== undefined) header.comment = new Uint8Array(Buffer.from(comment, 'utf8'));
  return header;
}

/** [key, value] of a text chunk as PIL's PngStream reads it, or undefined where PIL skips it. */
function pngText(type: string, data: Uint8Array): [string, string] | undefined {
  const nul = data.indexOf(0);
  const key = latin1(nul === -1 ? data : data.subarray(0, nul));
  const rest = nul === -1 ? new Uint8Array(0) : data.subarray(nul + 1);
  if (!key) return undefined;
  const inflate = (z: Uint8Array) => {
    try {
      return new Uint8Array(inflateSync(z));
    } catch {
      return undefined;
    }
  };
  if (type === 'tEXt') return [key, latin1(rest)];
  if (type === 'zTXt') {
    if (!rest.length) return [key, ''];
    if (rest[0] !== 0) return undefined;
    const v = inflate(rest.subarray(1));
    return v && [key, latin1(v)];
  }
  // iTXt: compression flag, method, language\0, translated keyword\0, text (UTF-8)
  if (rest.length < 2) return undefined;
  const [flag, method] = rest;
  const l1 = rest.indexOf(0, 2);
  const l2 = l1 === -1 ? -1 : rest.indexOf(0, l1 + 1);
  if (l2 === -1) return undefined;
  let v: Uint8Array | undefined = rest.subarray(l2 + 1);
  if (flag) v = method === 0 ? inflate(v) : undefined;
  if (!v) return undefined;
  try {
    return [key, new TextDecoder('utf-8', { fatal: true }).decode(v)];
  } catch {
    return undefined;
  }
}

// ----------------------------------------------------------------------------------------- JPEG

/** JPEG: the frame header and the last COM segment before the scan (PIL's `info["comment"]`). */
function jpegHeader(b: Uint8Array): ImageHeader {
  let at = 2;
  let frame: { width: number; height: number; mode: PilMode } | undefined;
  let comment: Uint8Array | undefined;
  for (;;) {
    while (at < b.length && b[at] !== 0xff) at++; // PIL skips stray bytes between segments
    while (at < b.length && b[at] === 0xff) at++;
    if (at >= b.length) break;
    const marker = b[at++];
    if (marker === 0xd9 || marker === 0xda) break;
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01 || marker === 0x00) continue;
    if (at + 2 > b.length) break;
    const length = u16be(b, at);
    const data = b.subarray(at + 2, at + length);
    if (length < 2 || data.length < length - 2) break;
    if (marker === 0xfe) comment = data;
    else if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (![0xc0, 0xc1, 0xc2].includes(marker)) {
        throw new FormatError(`its JPEG coding (SOF${marker - 0xc0}: lossless, hierarchical or arithmetic) is not supported; only baseline, extended and progressive Huffman JPEGs are`);
      }
      if (data.length < 6) throw new FormatError('its JPEG frame header is truncated');
      const precision = data[0];
      if (precision !== 8) throw new FormatError(`it is a ${precision}-bit JPEG; only 8-bit JPEGs are supported (as in PIL)`);
      const components = data[5];
      const mode: PilMode | undefined = components === 1 ? 'L' : components === 3 ? 'RGB' : components === 4 ? 'CMYK' : undefined;
      if (!mode) throw new FormatError(`a JPEG with ${components} components is not supported`);
      frame = { width: u16be(data, 3), height: u16be(data, 1), mode };
    }
    at += length;
  }
  if (!frame) throw new FormatError('no JPEG frame header before the image data (truncated or not a JPEG)');
  return { format: 'JPEG', ...frame, ...(comment ? { comment } : {}) };
}

// ----------------------------------------------------------------------------------------- WebP

/** WebP: the canvas size (VP8X) or the bitstream's; PIL opens it RGB or RGBA, both sent as RGB. */
function webpHeader(b: Uint8Array): ImageHeader {
  const fourcc = latin1(b.subarray(12, 16));
  const d = b.subarray(20);
  let width: number, height: number;
  if (fourcc === 'VP8X' && d.length >= 10) {
    width = u24le(d, 4) + 1;
    height = u24le(d, 7) + 1;
  } else if (fourcc === 'VP8 ' && d.length >= 10) {
    width = u16le(d, 6) & 0x3fff;
    height = u16le(d, 8) & 0x3fff;
  } else if (fourcc === 'VP8L' && d.length >= 5 && d[0] === 0x2f) {
    const bits = d[1] | (d[2] << 8) | (d[3] << 16) | (d[4] << 24);
    width = (bits & 0x3fff) + 1;
    height = ((bits >>> 14) & 0x3fff) + 1;
  } else {
    throw new FormatError('its WebP header is not one of VP8, VP8L or VP8X (truncated or corrupt)');
  }
  return { format: 'WebP', width, height, mode: 'RGB' };
}

// ------------------------------------------------------------------------------------------ GIF

/** A GIF's first frame as PIL opens it: mode P (its palette) or L, one byte per pixel. */
export interface GifFrame extends ImageHeader {
  pixels: Uint8Array;
  /** 3 bytes an entry (P); undefined in mode L. */
  palette?: Uint8Array;
}

/** PIL's `_is_palette_needed`: a palette is dropped (mode L) when entry i is (i, i, i) throughout. */
const paletteNeeded = (p: Uint8Array) => {
  for (let i = 0; i < p.length; i += 3) if (!(i / 3 === p[i] && p[i] === p[i + 1] && p[i + 1] === p[i + 2])) return true;
  return false;
};

function gifBlocks(b: Uint8Array, at: number): { data: Uint8Array[]; end: number } {
  const data: Uint8Array[] = [];
  for (;;) {
    if (at >= b.length) throw new FormatError('the GIF ends inside a data block (truncated)');
    const n = b[at++];
    if (n === 0) return { data, end: at };
    if (at + n > b.length) throw new FormatError('the GIF ends inside a data block (truncated)');
    data.push(b.subarray(at, at + n));
    at += n;
  }
}

/** The header of a GIF (its first frame's extent may enlarge the size, as in PIL). */
export function gifHeader(b: Uint8Array): ImageHeader {
  const { pixels: _p, palette: _q, ...header } = parseGif(b, false);
  return header;
}

/** The first frame, decoded (LZW), on a canvas of PIL's size. */
export function decodeGifFirstFrame(b: Uint8Array, checkPixels: (width: number, height: number) => void): GifFrame {
  return parseGif(b, true, checkPixels);
}

function parseGif(b: Uint8Array, decode: boolean, checkPixels?: (width: number, height: number) => void): GifFrame {
  if (b.length < 13) throw new FormatError('the GIF header is truncated');
  let width = u16le(b, 6);
  let height = u16le(b, 8);
  const flags = b[10];
  let at = 13;
  let globalPalette: Uint8Array | undefined;
  if (flags & 0x80) {
    const n = 3 << ((flags & 7) + 1);
    if (at + n > b.length) throw new FormatError('the GIF ends inside its colour table (truncated)');
    const p = b.subarray(at, at + n);
    if (paletteNeeded(p)) globalPalette = p;
    at += n;
  }
  let transparency: number | undefined;
  const comments: Uint8Array[] = [];
  for (;;) {
    if (at >= b.length) throw new FormatError('the GIF has no image (truncated)');
    const s = b[at++];
    if (s === 0x21) {
      if (at >= b.length) throw new FormatError('the GIF ends inside an extension (truncated)');
      const label = b[at++];
      const { data, end } = gifBlocks(b, at);
      at = end;
      if (label === 0xf9 && data.length) {
        const gce = data[0];
        if (gce[0] & 1) transparency = gce[3];
      } else if (label === 0xfe) {
        // PIL joins the blocks of one comment extension, and separates extensions with "\n".
        if (data.length && data[0].length && comments.length) comments.push(new Uint8Array([0x0a]));
        comments.push(...data);
      }
    } else if (s === 0x2c) {
      if (at + 9 > b.length) throw new FormatError('the GIF ends inside an image descriptor (truncated)');
      const x0 = u16le(b, at), y0 = u16le(b, at + 2);
      const w = u16le(b, at + 4), h = u16le(b, at + 6);
      const iflags = b[at + 8];
      at += 9;
      // PIL: None (no local table), False (a local table that is the identity grayscale), or a palette.
      let local: Uint8Array | false | undefined;
      if (iflags & 0x80) {
        const n = 3 << ((iflags & 7) + 1);
        if (at + n > b.length) throw new FormatError('the GIF ends inside a colour table (truncated)');
        const p = b.subarray(at, at + n);
        local = paletteNeeded(p) ? p : false;
        at += n;
      }
      const x1 = x0 + w, y1 = y0 + h;
      if (x1 > width || y1 > height) {
        width = Math.max(x1, width);
        height = Math.max(y1, height);
      }
      const palette = local === undefined ? globalPalette : local || undefined;
      const header: ImageHeader = { format: 'GIF', width, height, mode: palette ? 'P' : 'L' };
      if (comments.length) header.comment = new Uint8Array(Buffer.concat(comments));
      if (!decode) return { ...header, pixels: new Uint8Array(0) };
      checkPixels?.(width, height);
      if (at >= b.length) throw new FormatError('the GIF ends before its image data (truncated)');
      const minCodeSize = b[at++];
      const { data } = gifBlocks(b, at);
      const pixels = new Uint8Array(width * height);
      if (transparency !== undefined) pixels.fill(transparency);
      lzwDecodeInto(Buffer.concat(data), minCodeSize, pixels, width, { x0, y0, w, h, interlaced: (iflags & 0x40) !== 0 });
      return { ...header, pixels, ...(palette ? { palette } : {}) };
    } else if (s === 0x3b) {
      throw new FormatError('the GIF has no image');
    } else {
      // PIL skips unknown bytes between blocks.
    }
  }
}

/** GIF LZW into the frame's rectangle of `canvas` (rows in interlace order when interlaced). */
function lzwDecodeInto(
  data: Uint8Array,
  minCodeSize: number,
  canvas: Uint8Array,
  canvasWidth: number,
  frame: { x0: number; y0: number; w: number; h: number; interlaced: boolean },
): void {
  if (minCodeSize < 1 || minCodeSize > 11) throw new FormatError(`the GIF's LZW code size ${minCodeSize} is not valid`);
  const { x0, y0, w, h, interlaced } = frame;
  const total = w * h;
  if (!total) return;
  const rows: number[] = [];
  if (interlaced) {
    for (const [start, step] of [[0, 8], [4, 8], [2, 4], [1, 2]]) for (let y = start; y < h; y += step) rows.push(y);
  }
  const canvasHeight = canvas.length / canvasWidth;
  let written = 0;
  const emit = (index: number) => {
    const row = Math.floor(written / w);
    const x = x0 + (written % w);
    const y = y0 + (interlaced ? rows[row] : row);
    if (x < canvasWidth && y < canvasHeight) canvas[y * canvasWidth + x] = index;
    written++;
  };
  const clear = 1 << minCodeSize;
  const eoi = clear + 1;
  const prefix = new Int16Array(4096);
  const suffix = new Uint8Array(4096);
  const stack = new Uint8Array(4097);
  let codeSize = minCodeSize + 1;
  let next = eoi + 1;
  let prev = -1;
  let first = 0;
  let bits = 0;
  let acc = 0;
  for (let i = 0; i < data.length && written < total; ) {
    while (bits < codeSize && i < data.length) {
      acc |= data[i++] << bits;
      bits += 8;
    }
    if (bits < codeSize) break;
    const code = acc & ((1 << codeSize) - 1);
    acc >>>= codeSize;
    bits -= codeSize;
    if (code === clear) {
      codeSize = minCodeSize + 1;
      next = eoi + 1;
      prev = -1;
      continue;
    }
    if (code === eoi) break;
    let top = 0;
    let c: number;
    if (prev === -1) {
      if (code >= clear) throw new FormatError('the GIF image data is corrupt (a code before its table entry)');
      emit(code);
      prev = code;
      first = code;
      continue;
    }
    if (code < next) {
      c = code;
    } else if (code === next) {
      stack[top++] = first;
      c = prev;
    } else {
      throw new FormatError('the GIF image data is corrupt (a code past the table)');
    }
    while (c >= clear) {
      stack[top++] = suffix[c];
      c = prefix[c];
    }
    first = c;
    stack[top++] = c;
    while (top > 0 && written < total) emit(stack[--top]);
    if (next < 4096) {
      prefix[next] = prev;
      suffix[next] = first;
      next++;
      if (next === 1 << codeSize && codeSize < 12) codeSize++;
    }
    prev = code;
  }
  // PIL reads on for the missing pixels and reports the file truncated.
  if (written < total) throw new FormatError(`the GIF's first frame ends after ${written} of its ${total} pixels (truncated)`);
}

/** The header of any supported format (size, PIL mode, comment). */
export function readHeader(format: ImageFormat, b: Uint8Array): ImageHeader {
  switch (format) {
    case 'PNG':
      return pngHeader(b);
    case 'JPEG':
      return jpegHeader(b);
    case 'WebP':
      return webpHeader(b);
    case 'GIF':
      return gifHeader(b);
  }
}
