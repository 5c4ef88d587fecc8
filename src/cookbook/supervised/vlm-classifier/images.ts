// A classifier row's image, decoded when its batch is loaded: the encoded bytes (a `{bytes, path}`
// cell, a parquet cell read now, or an image file), resized so the longest side is at most
// `max_image_size` (the reference's resize_image: aspect kept, sizes truncated, Lanczos) and
// flipped left-right when asked, then decoded as every image part is (images/load.ts).

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { DataFormatError } from '../../errors.js';
import { loadImage } from '../../images/load.js';
import type { DecodedImage } from '../../images/types.js';
import { readParquetImages, type ClassifierRow } from './source.js';

export interface ImageOptions {
  maxImageSize: number;
  /** The image column's name, for messages. */
  column: string;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return `an object with keys ${Object.keys(value).join(', ') || 'none'}`;
  const s = JSON.stringify(value);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** The encoded bytes of an image cell: `{bytes, path}` (HF's Image feature), raw bytes, or a path / file: / data: URL. */
async function cellBytes(value: unknown, dir: string, at: string, column: string): Promise<Uint8Array> {
  const fromPath = async (p: string) => {
    if (p.startsWith('data:')) {
      const comma = p.indexOf(',');
      if (comma < 0) throw new DataFormatError(`${at}: column "${column}": malformed data: URL`);
      const meta = p.slice(5, comma);
      return meta.endsWith(';base64') ? new Uint8Array(Buffer.from(p.slice(comma + 1), 'base64')) : new Uint8Array(Buffer.from(decodeURIComponent(p.slice(comma + 1)), 'latin1'));
    }
    const file = p.startsWith('file://') ? fileURLToPath(p) : path.resolve(dir, p);
    try {
      return new Uint8Array(await readFile(file));
    } catch (e) {
      throw new DataFormatError(`${at}: column "${column}": cannot read the image file ${p} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  };
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return fromPath(value);
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const { bytes, path: p } = value as { bytes?: unknown; path?: unknown };
    if (bytes instanceof Uint8Array && bytes.length > 0) return bytes;
    if (typeof p === 'string' && p !== '') return fromPath(p);
  }
  throw new DataFormatError(`${at}: column "${column}" is not an image (expected an Image cell {bytes, path}, bytes or a path), got ${describe(value)}`);
}

/** The encoded bytes of each row's image (parquet cells read together, per row group). */
export async function rowImageBytes(rows: readonly ClassifierRow[], column: string): Promise<Uint8Array[]> {
  const parquet = rows.map((r, i) => [r, i] as const).filter(([r]) => r.image.kind === 'parquet');
  const cells = new Map<number, unknown>();
  if (parquet.length > 0) {
    const read = await readParquetImages(
      parquet.map(([r]) => r.image as { kind: 'parquet'; file: never; row: number }),
      column,
    );
    parquet.forEach(([, i], k) => cells.set(i, read[k]));
  }
  return Promise.all(
    rows.map(async (row, i) => {
      const ref = row.image;
      if (ref.kind === 'file') return cellBytes(ref.absPath, path.dirname(ref.absPath), row.at, column);
      if (ref.kind === 'cell') return cellBytes(ref.value, ref.dir, row.at, column);
      return cellBytes(cells.get(i), path.dirname(ref.file.absPath), row.at, column);
    }),
  );
}

/** The reference's resize_image target: the longest side scaled to `maxSize`, the other truncated (Python int()). */
export function resizedSize(width: number, height: number, maxSize: number): { width: number; height: number } | undefined {
  if (Math.max(width, height) <= maxSize) return undefined;
  if (width > height) return { width: maxSize, height: Math.max(1, Math.trunc((height * maxSize) / width)) };
  return { width: Math.max(1, Math.trunc((width * maxSize) / height)), height: maxSize };
}

/** One image resized, flipped when `flip`, and decoded; errors name the row and column. */
export async function prepareImage(bytes: Uint8Array, flip: boolean, opts: ImageOptions, at: string): Promise<DecodedImage> {
  let width: number | undefined;
  let height: number | undefined;
  try {
    ({ width, height } = await sharp(bytes).metadata());
  } catch (e) {
    throw new DataFormatError(`${at}: column "${opts.column}": cannot decode the image (${(e as Error).message})`);
  }
  if (!width || !height) throw new DataFormatError(`${at}: column "${opts.column}": the image has no size`);
  const size = resizedSize(width, height, opts.maxImageSize);
  if (!size && !flip) return loadImage(bytes, `${at} column "${opts.column}"`);
  let img = sharp(bytes);
  if (size) img = img.resize(size.width, size.height, { fit: 'fill', kernel: 'lanczos3' });
  if (flip) img = img.flop();
  // Lossless in between: the image is encoded once more, as the JPEG every image chunk carries.
  const png = await img.png({ compressionLevel: 1 }).toBuffer();
  return loadImage(new Uint8Array(png), `${at} column "${opts.column}"`);
}
