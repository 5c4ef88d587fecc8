// Decoding a conversation's images ahead of rendering: the one asynchronous step (file reads,
// sharp), so that renderers stay synchronous and pure.

import type { ContentPart, Message } from '../renderers/types.js';
import { loadImage } from './load.js';
import { isDecodedImage } from './types.js';

/**
 * The conversation with every image part's source (a path, a `file://`/`data:` URL or bytes)
 * replaced by the decoded image; other parts and messages are kept as they are (not copied).
 * `where` prefixes error locations, e.g. `train.jsonl:12 messages[0].content[1]`.
 */
export async function loadMessageImages(messages: readonly Message[], where = ''): Promise<Message[]> {
  return Promise.all(
    messages.map(async (m, i) => {
      if (typeof m.content === 'string' || !m.content.some((p) => p.type === 'image')) return m;
      const content = await Promise.all(
        m.content.map(async (p, j): Promise<ContentPart> => {
          if (p.type !== 'image' || isDecodedImage(p.image)) return p;
          const at = `${where ? `${where} ` : ''}messages[${i}].content[${j}]`;
          return { type: 'image', image: await loadImage(p.image, at) };
        }),
      );
      return { ...m, content };
    }),
  );
}


/** Whether any message has an image part. */
export function hasImages(messages: readonly Message[]): boolean {
  return messages.some((m) => typeof m.content !== 'string' && m.content.some((p) => p.type === 'image'));
}
