// Just enough PNG decoding to look at a headless Chromium screenshot (8-bit RGB or RGBA, not
// interlaced), with node:zlib: a test dependency would be more than this.
import { inflateSync } from 'node:zlib';

export interface Image {
  width: number;
  height: number;
  /** Bytes per pixel: 3 (RGB) or 4 (RGBA). */
  channels: number;
  pixels: Buffer;
}

export function decodePng(png: Buffer): Image {
  if (png.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let offset = 8;
  let width = 0, height = 0, channels = 0;
  const idat: Buffer[] = [];
  while (offset < png.length) {
    const len = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    const data = png.subarray(offset + 8, offset + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colorType, , , interlace] = data.subarray(8, 13);
      if (depth !== 8 || interlace !== 0 || (colorType !== 2 && colorType !== 6)) throw new Error(`unsupported PNG (depth ${depth}, colour type ${colorType}, interlace ${interlace})`);
      channels = colorType === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    offset += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels] : 0;
      const p = a + b - c;
      const paeth = Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter];
      if (predictor === undefined) throw new Error(`bad PNG filter ${filter} on row ${y}`);
      pixels[y * stride + x] = (line[x] + predictor) & 0xff;
    }
  }
  return { width, height, channels, pixels };
}

/** Share of pixels that are not (near) white or the page's near-white background. */
export function inkRatio(img: Image, threshold = 235): number {
  let ink = 0;
  for (let i = 0; i < img.pixels.length; i += img.channels) {
    if (Math.min(img.pixels[i], img.pixels[i + 1], img.pixels[i + 2]) < threshold) ink++;
  }
  return ink / (img.width * img.height);
}

/** Distinct colours (quantised to 5 bits per channel): a page of charts has many, a blank one a few. */
export function colourCount(img: Image): number {
  const seen = new Set<number>();
  for (let i = 0; i < img.pixels.length; i += img.channels) seen.add(((img.pixels[i] >> 3) << 10) | ((img.pixels[i + 1] >> 3) << 5) | (img.pixels[i + 2] >> 3));
  return seen.size;
}

/** Pixels within `tolerance` (per channel) of a `#rrggbb` colour: e.g. a run's line colour. */
export function pixelsNear(img: Image, hex: string, tolerance = 24): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  let n = 0;
  for (let i = 0; i < img.pixels.length; i += img.channels) {
    if (Math.abs(img.pixels[i] - r) <= tolerance && Math.abs(img.pixels[i + 1] - g) <= tolerance && Math.abs(img.pixels[i + 2] - b) <= tolerance) n++;
  }
  return n;
}
