// An image part's source → the JPEG the reference sends for it (tinker_cookbook/renderers/base.py
// `image_to_chunk` and image_processing_utils.py `image_to_data_uri`, on PIL 13):
//
//   PIL opens the image; RGBA, LA and P are converted to RGB (alpha dropped, not composited over a
//   background; a palette expanded), L (and 1-bit, as L) stays one grayscale channel, RGB stays;
//   then `save(format="JPEG")` with PIL's defaults: libjpeg-turbo at quality 75, 4:2:0 chroma
//   subsampling, baseline Huffman tables (no optimisation), a JFIF 1.01 APP0 segment with a 1:1
//   density, no EXIF, no ICC profile, and a COM segment when the source had a comment.
//
// Here sharp (libvips) decodes PNG, JPEG and WebP to raw pixels (with `ignoreIcc`, so an embedded
// profile does not change them: PIL does not colour-manage) and GIFs are decoded by formats.ts;
// the pixels are converted as PIL converts them and encoded by sharp's libjpeg-turbo-compatible
// encoder, whose output equals PIL's byte for byte once its marker segments are replaced by PIL's
// (test/parity/images.parity.test.ts compares the two over many images).
//
// Supported: PNG (all bit depths but 16-bit grayscale, which PIL cannot write as JPEG), JPEG
// (8-bit baseline, extended and progressive; grayscale or colour, not CMYK), WebP (lossy,
// lossless, animated: the first frame) and GIF (the first frame). Sources: a local path (`~`
// expanded), a `file://` URL (no host, or localhost), a `data:` URL (base64 or percent-encoded)
// or the encoded bytes. Remote URLs are refused, as in the reference's `image_to_data_uri`.

import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp, { type OutputInfo } from 'sharp';
import { ImageError } from './errors.js';
import { FormatError, SUPPORTED_IMAGE_FORMATS, decodeGifFirstFrame, pngWithPilChecksums, readHeader, sniffFormat, type ImageHeader } from './formats.js';
import type { DecodedImage } from './types.js';

export { ImageError } from './errors.js';
export { SUPPORTED_IMAGE_FORMATS } from './formats.js';

/**
 * The largest image (width × height) decoded: PIL's `Image.MAX_IMAGE_PIXELS` (89,478,485) × 2,
 * past which `Image.open` raises DecompressionBombError (between the two it only warns).
 */
export const MAX_IMAGE_PIXELS = 178_956_970;

/** PIL's `JpegImagePlugin.MAX_BYTES_IN_MARKER`: a longer comment is refused ("Comment is too long"). */
const MAX_COMMENT_BYTES = 65_533;

/** The APP0 segment libjpeg writes for PIL: JFIF 1.01, no units, 1:1 density, no thumbnail. */
const JFIF_APP0 = Buffer.from('ffe000104a46494600010100000100010000', 'hex');

/**
 * Reads and decodes an image part's source into the JPEG the reference would send and the size the
 * model's processor counts tokens from. `where` names the part in errors (e.g. `messages[0].content[1]`).
 */
export async function loadImage(source: string | Uint8Array, where: string): Promise<DecodedImage> {
  if (source instanceof Uint8Array) return decodeImage(source, where);
  if (typeof source !== 'string') {
    throw new ImageError(where, `an image must be a path, a file:// or data: URL, or bytes; got ${describe(source)}`);
  }
  return decodeImage(await sourceBytes(source, where), where);
}

const describe = (x: unknown) => (x === null ? 'null' : Array.isArray(x) ? 'an array' : typeof x === 'object' ? `an object (${Object.keys(x as object).slice(0, 5).join(', ')})` : typeof x);

// -------------------------------------------------------------------------------------- sources

/** urllib's scheme: a letter, then letters, digits, + - . before the first colon. */
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;

async function sourceBytes(source: string, where: string): Promise<Uint8Array> {
  const scheme = SCHEME.exec(source)?.[1].toLowerCase();
  if (scheme === undefined) {
    if (!source) throw new ImageError(where, 'the image source is an empty string');
    return readLocal(expandUser(source), where);
  }
  if (scheme === 'data') return dataUrlBytes(source, where);
  if (scheme === 'file') {
    // urlsplit: the fragment and query are not part of the path; the netloc follows "//".
    let rest = source.slice(source.indexOf(':') + 1).replace(/#.*$/s, '').replace(/\?.*$/s, '');
    let host = '';
    if (rest.startsWith('//')) {
      const end = rest.slice(2).search(/\//);
      host = end === -1 ? rest.slice(2) : rest.slice(2, end + 2);
      rest = end === -1 ? '' : rest.slice(end + 2);
    }
    if (host !== '' && host.toLowerCase() !== 'localhost') {
      throw new ImageError(
        where,
        `does not fetch remote image URLs (a file:// URL on host ${JSON.stringify(host)}); copy ${source} to this machine ` +
          'and give a local path, or a base64 data: URI, instead',
      );
    }
    return readLocal(expandUser(Buffer.from(percentDecode(rest)).toString('utf8')), where);
  }
  throw new ImageError(
    where,
    `does not fetch remote image URLs (scheme ${JSON.stringify(scheme)}); materialize ${abbreviate(source)} into a local ` +
      'path or a base64 data: URI first',
  );
}

const abbreviate = (s: string) => (s.length > 120 ? `${s.slice(0, 100)}…` : s);

/** Python's `Path.expanduser` for `~` and `~/…`. */
function expandUser(p: string): string {
  if (p === '~') return os.homedir();
  if (p.startsWith('~/')) return path.join(os.homedir(), p.slice(2));
  return p;
}

async function readLocal(file: string, where: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(file));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new ImageError(where, `no image file at ${file}`);
    if (code === 'EISDIR') throw new ImageError(where, `${file} is a directory, not an image file`);
    if (code === 'EACCES' || code === 'EPERM') throw new ImageError(where, `cannot read ${file}: permission denied`);
    throw new ImageError(where, `cannot read ${file}: ${(e as Error).message}`);
  }
}

/** urllib's `unquote_to_bytes`: %XX escapes decoded, anything else kept (UTF-8 encoded). */
function percentDecode(s: string): Uint8Array {
  const raw = Buffer.from(s, 'utf8');
  const out = new Uint8Array(raw.length);
  let n = 0;
  const hex = (c: number) => (c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1);
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === 0x25 && i + 2 < raw.length && hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
      out[n++] = hex(raw[i + 1]) * 16 + hex(raw[i + 2]);
      i += 2;
    } else {
      out[n++] = raw[i];
    }
  }
  return out.subarray(0, n);
}

/**
 * urllib's data: URL handler: the media type is ignored (the bytes are sniffed, as PIL does), the
 * data percent-decoded, then base64-decoded when the media type ends with ";base64" (characters
 * outside the alphabet are skipped, as binascii does; wrong padding is an error).
 */
function dataUrlBytes(url: string, where: string): Uint8Array {
  const afterScheme = url.slice(url.indexOf(':') + 1);
  const comma = afterScheme.indexOf(',');
  if (comma === -1) throw new ImageError(where, `malformed data: URL (no "," before its data): ${abbreviate(url)}`);
  const mediaType = afterScheme.slice(0, comma);
  const data = percentDecode(afterScheme.slice(comma + 1));
  if (!mediaType.endsWith(';base64')) return data;
  const text = Buffer.from(data).toString('latin1');
  const pad = text.indexOf('=');
  const body = (pad === -1 ? text : text.slice(0, pad)).replace(/[^A-Za-z0-9+/]/g, '');
  const padding = pad === -1 ? 0 : text.slice(pad).replace(/[^=]/g, '').length;
  const rem = body.length % 4;
  if (rem === 1) {
    throw new ImageError(where, `malformed base64 in the data: URL (${body.length} data characters cannot be 1 more than a multiple of 4)`);
  }
  if (rem !== 0 && padding < 4 - rem) throw new ImageError(where, 'malformed base64 in the data: URL (incorrect padding)');
  return new Uint8Array(Buffer.from(body, 'base64'));
}

// ------------------------------------------------------------------------------------- decoding

/** PIL's decompression-bomb check: refuses an image over MAX_IMAGE_PIXELS, naming `where`. */
export function checkImageSize(width: number, height: number, where: string): void {
  // PIL's _decompression_bomb_check counts max(1, side) per side.
  const pixels = Math.max(1, width) * Math.max(1, height);
  if (pixels > MAX_IMAGE_PIXELS) {
    throw new ImageError(
      where,
      `the image is ${width}×${height} = ${pixels} pixels, over the cap of ${MAX_IMAGE_PIXELS} (PIL's MAX_IMAGE_PIXELS × 2, ` +
        'where it refuses a decompression bomb); downscale it first',
    );
  }
}

/** Decodes encoded image bytes (see the file comment); `where` names the part in errors. */
export async function decodeImage(bytes: Uint8Array, where: string): Promise<DecodedImage> {
  if (!bytes.length) throw new ImageError(where, 'the image is empty (0 bytes)');
  const format = sniffFormat(bytes);
  if (typeof format !== 'string') {
    const supported = SUPPORTED_IMAGE_FORMATS.join(', ');
    throw new ImageError(
      where,
      format.unsupported
        ? `${format.unsupported} images are not supported (supported: ${supported}); convert it first`
        : `not an image of a supported format (supported: ${supported}): its bytes start ${Buffer.from(bytes.subarray(0, 12)).toString('hex')}`,
    );
  }
  let header: ImageHeader;
  try {
    header = readHeader(format, bytes);
  } catch (e) {
    if (e instanceof FormatError) throw new ImageError(where, `cannot decode the ${format} image: ${e.message}`);
    throw e;
  }
  if (header.width === 0 || header.height === 0) {
    throw new ImageError(where, `cannot decode the ${format} image: its size is ${header.width}×${header.height}`);
  }
  checkImageSize(header.width, header.height, where);
  if (header.mode === 'I;16') {
    throw new ImageError(
      where,
      'a 16-bit grayscale PNG is not supported: the reference (PIL) opens it in mode I;16, which it cannot write as JPEG; ' +
        'convert it to 8-bit first',
    );
  }
  if (header.mode === 'CMYK') {
    throw new ImageError(where, 'a CMYK JPEG is not supported (the reference would send it as a CMYK JPEG); convert it to RGB first');
  }
  if (header.comment && header.comment.length > MAX_COMMENT_BYTES) {
    throw new ImageError(where, `its comment is ${header.comment.length} bytes, over JPEG's ${MAX_COMMENT_BYTES} (PIL: "Comment is too long")`);
  }
  const gray = header.mode === 'L' || header.mode === '1';
  const { pixels, width, height } =
    format === 'GIF' ? gifPixels(bytes, gray, where) : await sharpPixels(format === 'PNG' ? pngWithPilChecksums(bytes) : bytes, format, gray, where);
  if (width !== header.width || height !== header.height) {
    // PIL takes the size from the header; a decoder that disagrees would count tokens for another image.
    throw new ImageError(where, `cannot decode the ${format} image: its header says ${header.width}×${header.height}, its pixels are ${width}×${height}`);
  }
  const jpeg = await encodeJpeg(pixels, width, height, gray ? 1 : 3, header.comment, where);
  return { type: 'decoded_image', jpeg, width, height };
}

interface Pixels {
  pixels: Uint8Array;
  width: number;
  height: number;
}

/** Decodes with sharp, and keeps the channels PIL's converted image has (1 for L, else 3, alpha dropped). */
async function sharpPixels(bytes: Uint8Array, format: string, gray: boolean, where: string): Promise<Pixels> {
  let out: { data: Buffer; info: OutputInfo };
  try {
    out = await sharp(bytes, {
      // Truncated or corrupt pixel data is an error (not a grey half-image); warnings that PIL also
      // lets pass (e.g. extraneous bytes before a JPEG marker) are not.
      failOn: 'error',
      limitInputPixels: MAX_IMAGE_PIXELS,
      // PIL does not colour-manage: an embedded ICC profile must not change the pixels.
      ignoreIcc: true,
      autoOrient: false,
      pages: 1,
      page: 0,
    })
      .raw()
      .toBuffer({ resolveWithObject: true });
  } catch (e) {
    const message = (e as Error).message;
    if (/exceeds pixel limit/.test(message)) {
      throw new ImageError(where, `the image is over the cap of ${MAX_IMAGE_PIXELS} pixels (PIL's MAX_IMAGE_PIXELS × 2); downscale it first`);
    }
    throw new ImageError(where, `cannot decode the ${format} image, which is truncated or corrupt (${message})`);
  }
  const { data, info } = out;
  const { width, height, channels } = info;
  checkImageSize(width, height, where);
  const n = width * height;
  if (gray) {
    if (channels === 1) return { pixels: data, width, height };
    const pixels = new Uint8Array(n);
    for (let i = 0, j = 0; i < n; i++, j += channels) pixels[i] = data[j];
    return { pixels, width, height };
  }
  if (channels === 3) return { pixels: data, width, height };
  const pixels = new Uint8Array(n * 3);
  if (channels === 4) {
    for (let i = 0, j = 0, k = 0; i < n; i++, j += 4, k += 3) {
      pixels[k] = data[j];
      pixels[k + 1] = data[j + 1];
      pixels[k + 2] = data[j + 2];
    }
  } else {
    // Grayscale (with or without alpha) sent as RGB: PIL's LA → RGB repeats L.
    for (let i = 0, j = 0, k = 0; i < n; i++, j += channels, k += 3) pixels[k] = pixels[k + 1] = pixels[k + 2] = data[j];
  }
  return { pixels, width, height };
}

/** A GIF's first frame: P expanded through its palette (PIL's P → RGB), or L as it is. */
function gifPixels(bytes: Uint8Array, gray: boolean, where: string): Pixels {
  let frame;
  try {
    frame = decodeGifFirstFrame(bytes, (w, h) => checkImageSize(w, h, where));
  } catch (e) {
    if (e instanceof FormatError) throw new ImageError(where, `cannot decode the GIF image: ${e.message}`);
    throw e;
  }
  const { width, height } = frame;
  if (gray) return { pixels: frame.pixels, width, height };
  const palette = frame.palette!;
  const entries = palette.length / 3;
  const n = width * height;
  const pixels = new Uint8Array(n * 3);
  for (let i = 0, k = 0; i < n; i++, k += 3) {
    const p = frame.pixels[i];
    // Entries past the table's end are black in PIL's palette.
    if (p < entries) {
      pixels[k] = palette[3 * p];
      pixels[k + 1] = palette[3 * p + 1];
      pixels[k + 2] = palette[3 * p + 2];
    }
  }
  return { pixels, width, height };
}

/** libjpeg-turbo at PIL's settings, with PIL's APP0 (and COM) in place of what the encoder writes. */
async function encodeJpeg(
  pixels: Uint8Array,
  width: number,
  height: number,
  channels: 1 | 3,
  comment: Uint8Array | undefined,
  where: string,
): Promise<Uint8Array> {
  let encoded: Buffer;
  try {
    let img = sharp(pixels, { raw: { width, height, channels }, limitInputPixels: MAX_IMAGE_PIXELS });
    if (channels === 1) img = img.toColourspace('b-w');
    encoded = await img
      .jpeg({
        quality: 75,
        chromaSubsampling: '4:2:0',
        mozjpeg: false,
        optimiseCoding: false,
        progressive: false,
        trellisQuantisation: false,
        overshootDeringing: false,
        optimiseScans: false,
        quantisationTable: 0,
      })
      .toBuffer();
  } catch (e) {
    throw new ImageError(where, `cannot encode the ${width}×${height} image as JPEG: ${(e as Error).message}`);
  }
  return withPilMarkers(encoded, comment);
}

/**
 * The JPEG with its APPn and COM segments replaced by PIL's: the JFIF APP0, then the comment.
 * Everything from the first other segment (the quantisation tables) on is the encoder's own.
 */
function withPilMarkers(jpeg: Buffer, comment: Uint8Array | undefined): Uint8Array {
  let at = 2;
  while (at + 4 <= jpeg.length && jpeg[at] === 0xff && ((jpeg[at + 1] >= 0xe0 && jpeg[at + 1] <= 0xef) || jpeg[at + 1] === 0xfe)) {
    at += 2 + ((jpeg[at + 2] << 8) | jpeg[at + 3]);
  }
  const parts: Uint8Array[] = [jpeg.subarray(0, 2), JFIF_APP0];
  if (comment?.length) {
    const length = comment.length + 2;
    parts.push(new Uint8Array([0xff, 0xfe, length >> 8, length & 0xff]), comment);
  }
  parts.push(jpeg.subarray(at));
  return new Uint8Array(Buffer.concat(parts));
}
