#!/usr/bin/env node
// Generates data/shapes/: a small image-classification set for the vlm_classifier recipe
// (configs/vlm_classifier.json) in the image-folder layout `datasets` reads
// (`<split>/<class name>/<n>.png`): 3 colours × 3 shapes = 9 classes named `<colour>_<shape>`
// ("red_circle", which the recipe cleans to "red circle"), 16 training and 6 test images each, 128×128
// PNG (16 image tokens for tiny-qwen3-vl: at 64×64, 4 tokens, its frozen random vision tower gave the
// language model too little to learn the colour from in a few hundred steps). Each image is one
// filled shape, its size, position and shade jittered, on a light background. Deterministic: a fixed-seed PRNG; the pixels are what is
// reproducible (test/cookbook/vlm-classifier.test.ts regenerates and compares them), the PNG bytes
// depend on the encoder's version.
//
// Usage: node scripts/gen-shapes-dataset.mjs [outDir]   (default: <repo>/data/shapes)

import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { rng } from './lib/rng.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.resolve(process.argv[2] ?? path.join(root, 'data', 'shapes'));

const SIZE = 128;
const COLOURS = { red: [215, 45, 40], green: [45, 165, 60], blue: [40, 80, 215] };
const SHAPES = ['circle', 'square', 'triangle'];
const SPLITS = { train: 16, test: 6 };

const rand = rng(4242);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const clamp = (v) => Math.max(0, Math.min(255, v));

/** Is pixel centre (x, y) inside the shape of half-size r centred at (cx, cy)? */
function inside(shape, x, y, cx, cy, r) {
  const dx = x - cx;
  const dy = y - cy;
  if (shape === 'circle') return dx * dx + dy * dy <= r * r;
  if (shape === 'square') return Math.abs(dx) <= r * 0.85 && Math.abs(dy) <= r * 0.85;
  // An upright isosceles triangle: apex at the top, base at the bottom.
  if (dy < -r || dy > r) return false;
  return Math.abs(dx) <= ((dy + r) / (2 * r)) * r;
}

function draw(colour, shape) {
  const bg = int(232, 250);
  const [cr, cg, cb] = COLOURS[colour].map((c) => clamp(c + int(-18, 18)));
  const r = int(34, 50);
  const cx = SIZE / 2 + int(-12, 12);
  const cy = SIZE / 2 + int(-12, 12);
  const px = Buffer.alloc(SIZE * SIZE * 3);
  for (let y = 0; y < SIZE; y++) {
    for (let x = 0; x < SIZE; x++) {
      const i = (y * SIZE + x) * 3;
      const on = inside(shape, x + 0.5, y + 0.5, cx, cy, r);
      px[i] = on ? cr : bg;
      px[i + 1] = on ? cg : bg;
      px[i + 2] = on ? cb : bg;
    }
  }
  return px;
}

rmSync(outDir, { recursive: true, force: true });
let count = 0;
for (const [split, perClass] of Object.entries(SPLITS)) {
  for (const colour of Object.keys(COLOURS)) {
    for (const shape of SHAPES) {
      const dir = path.join(outDir, split, `${colour}_${shape}`);
      mkdirSync(dir, { recursive: true });
      for (let n = 0; n < perClass; n++) {
        const pixels = draw(colour, shape);
        await sharp(pixels, { raw: { width: SIZE, height: SIZE, channels: 3 } })
          .png({ compressionLevel: 9 })
          .toFile(path.join(dir, `${String(n).padStart(3, '0')}.png`));
        count++;
      }
    }
  }
}
console.log(`wrote ${count} images (${Object.keys(COLOURS).length * SHAPES.length} classes) to ${outDir}`);
