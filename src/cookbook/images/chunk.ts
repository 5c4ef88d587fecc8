// The ImageChunk of a decoded image (reference renderers/base.py `image_to_chunk`): its JPEG bytes,
// base64, and the number of tokens the model's image processor counts for the decoded size.

import type { ImageChunk } from '../../backends/types.js';
import { ImageError } from './errors.js';
import type { DecodedImage, ImageProcessor } from './types.js';

/**
 * The chunk a renderer puts in a ModelInput for `image`. `where`, when given, names the part in the
 * error raised when the processor cannot take the image (e.g. Qwen's aspect ratio over 200).
 */
export function imageChunkFor(image: DecodedImage, processor: ImageProcessor, where?: string): ImageChunk {
  let expected: number;
  try {
    expected = processor.numImageTokens(image.width, image.height);
  } catch (e) {
    if (where !== undefined && e instanceof ImageError) throw new ImageError(where, e.detail);
    throw e;
  }
  return { type: 'image', data: Buffer.from(image.jpeg).toString('base64'), format: 'jpeg', expected_tokens: expected };
}
