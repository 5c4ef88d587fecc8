// What every vision renderer does with an image part (reference renderers/base.py::image_to_chunk):
// the decoded image's JPEG bytes and the number of tokens the model's image processor counts for
// its size, as one ImageChunk. Text-only renderers refuse image parts up front, naming where.

import type { ImageChunk } from '../../backends/types.js';
import { RendererError } from '../errors.js';
import { imageChunkFor } from '../images/chunk.js';
import { ImageError } from '../images/errors.js';
import { isDecodedImage, type DecodedImage, type ImageProcessor } from '../images/types.js';
import type { ImagePart, Message } from './types.js';

function checkImage(part: ImagePart, processor: ImageProcessor | undefined, rendererName: string, where: string) {
  if (!processor) {
    throw new RendererError(
      `${rendererName} needs an image processor to render the image at ${where}: build the renderer with ` +
        "rendererForModel (which loads the model's) or getRenderer(name, tokenizer, { imageProcessor })",
    );
  }
  if (!isDecodedImage(part.image)) {
    throw new RendererError(
      `the image at ${where} is not loaded: decode a conversation's images with ` +
        'await loadMessageImages(messages) before rendering it',
    );
  }
}

/** The image part's chunk; `where` names the message and part for errors. */
export function renderImagePart(
  part: ImagePart,
  processor: ImageProcessor | undefined,
  rendererName: string,
  where: string,
): ImageChunk {
  checkImage(part, processor, rendererName, where);
  return imageChunkFor(part.image as DecodedImage, processor!);
}

/**
 * A vision renderer's check, before rendering, that every image can be rendered: loaded, and
 * countable by the processor (Qwen's refuses an aspect ratio over 200). Run on the caller's
 * messages, before a format inserts any of its own, so an error names the caller's part.
 */
export function requireRenderableImages(
  messages: readonly Message[],
  processor: ImageProcessor | undefined,
  rendererName: string,
): void {
  messages.forEach((m, i) => {
    if (typeof m.content === 'string') return;
    m.content.forEach((p, j) => {
      if (p.type !== 'image') return;
      const where = `messages[${i}].content[${j}]`;
      checkImage(p, processor, rendererName, where);
      const image = p.image as DecodedImage;
      try {
        processor!.numImageTokens(image.width, image.height);
      } catch (e) {
        if (e instanceof ImageError) throw new ImageError(where, e.detail);
        throw e;
      }
    });
  });
}

/** Where the first image part of a conversation is, e.g. `messages[2].content[0]`; undefined if none. */
export function firstImagePart(messages: readonly Message[]): string | undefined {
  for (let i = 0; i < messages.length; i++) {
    const content = messages[i].content;
    if (typeof content === 'string') continue;
    const j = content.findIndex((p) => p.type === 'image');
    if (j !== -1) return `messages[${i}].content[${j}]`;
  }
  return undefined;
}

/** A text-only renderer's refusal of a conversation with an image. */
export function refuseImages(messages: readonly Message[], rendererName: string): void {
  const where = firstImagePart(messages);
  if (where === undefined) return;
  throw new RendererError(
    `${rendererName} renders text only, but ${where} is an image: use a vision model with its VL renderer ` +
      '(qwen3_vl_instruct, qwen3_5, qwen3_8_*, kimi_k25, kimi_k26, nemotron3_ultra)',
  );
}
