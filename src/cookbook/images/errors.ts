import { DataError } from '../errors.js';

/**
 * An image part that cannot become an image chunk: its source cannot be read (a missing file, a
 * remote URL, a malformed data: URL), its bytes are not a whole image of a supported format, or it
 * is larger than the pixel cap. `where` names the part (e.g. `line 3: messages[0].content[1]`) and
 * starts the message.
 */
export class ImageError extends DataError {
  constructor(
    readonly where: string,
    readonly detail: string,
  ) {
    super(`${where}: ${detail}`);
  }
}
