// What an image is between its source (a path, a data: URL, bytes) and the ImageChunk a renderer
// puts in a ModelInput. Decoding is I/O and asynchronous (loadImage); rendering stays synchronous
// and pure: a renderer only counts tokens from the decoded size and copies the bytes.

/**
 * An image decoded, converted as the reference converts it (RGBA/LA/P → RGB, grayscale kept) and
 * re-encoded as the JPEG the reference sends (PIL's `save(format="JPEG")`, byte for byte).
 */
export interface DecodedImage {
  type: 'decoded_image';
  /** The chunk's bytes: a baseline JPEG. */
  jpeg: Uint8Array;
  /** Size in pixels of the decoded image (before any processor resize). */
  width: number;
  height: number;
}

/** Whether an image part's `image` is already decoded (not a path, URL or bytes). */
export const isDecodedImage = (image: unknown): image is DecodedImage =>
  typeof image === 'object' && image !== null && (image as { type?: unknown }).type === 'decoded_image';

/**
 * How many tokens a model's vision tower turns an image of a given size into (the reference's
 * `image_to_chunk`: `get_number_of_image_patches // merge_size**2`, or the processor's own count).
 */
export interface ImageProcessor {
  /** What it was loaded as (a model name or a preprocessor_config.json path), for messages. */
  readonly name: string;
  numImageTokens(width: number, height: number): number;
}
