// Pictures of simple shapes, drawn from a description (shape, colour, size, place) as SVG and
// rasterised by sharp (librsvg): the same description gives the same PNG bytes on every run.
import sharp from 'sharp';

export const SHAPES = ['circle', 'square', 'triangle', 'star'] as const;
export type Shape = (typeof SHAPES)[number];

export const COLOURS = { red: '#d62728', green: '#2ca02c', blue: '#1f77b4', orange: '#ff7f0e' } as const;
export type Colour = keyof typeof COLOURS;

export interface ShapePicture {
  shape: Shape;
  colour: Colour;
  /** Side of the square canvas, in pixels. */
  size: number;
  /** The shape's radius as a fraction of half the canvas (0.4–0.9 reads well). */
  scale: number;
  /** Centre offset as fractions of the canvas, each in [-0.15, 0.15]. */
  dx: number;
  dy: number;
}

function outline(shape: Shape, cx: number, cy: number, r: number): string {
  const points = (n: number, radius: (i: number) => number, turn = -Math.PI / 2) =>
    Array.from({ length: n }, (_, i) => {
      const a = turn + (2 * Math.PI * i) / n;
      return `${(cx + radius(i) * Math.cos(a)).toFixed(2)},${(cy + radius(i) * Math.sin(a)).toFixed(2)}`;
    }).join(' ');
  switch (shape) {
    case 'circle':
      return `<circle cx="${cx}" cy="${cy}" r="${r.toFixed(2)}"/>`;
    case 'square': {
      const h = r / Math.SQRT2;
      return `<rect x="${(cx - h).toFixed(2)}" y="${(cy - h).toFixed(2)}" width="${(2 * h).toFixed(2)}" height="${(2 * h).toFixed(2)}"/>`;
    }
    case 'triangle':
      return `<polygon points="${points(3, () => r)}"/>`;
    case 'star':
      return `<polygon points="${points(10, (i) => (i % 2 ? r * 0.45 : r))}"/>`;
  }
}

/** The picture as PNG bytes: the shape filled with its colour on white. */
export async function drawShape(p: ShapePicture): Promise<Uint8Array> {
  const half = p.size / 2;
  const cx = half + p.dx * p.size;
  const cy = half + p.dy * p.size;
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${p.size}" height="${p.size}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>` +
    `<g fill="${COLOURS[p.colour]}">${outline(p.shape, cx, cy, p.scale * half)}</g></svg>`;
  return new Uint8Array(await sharp(Buffer.from(svg)).png().toBuffer());
}
