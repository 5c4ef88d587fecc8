// Chat JSONL with image parts: paths resolve against the file, images are decoded when their batch
// loads (not when the file is read), and a bad image is an error naming the file, line and part.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { DataFormatError } from '../../src/cookbook/errors.js';
import { buildChatDatasets } from '../../src/cookbook/supervised/dataset.js';
import { loadConversationsJsonl } from '../../src/cookbook/supervised/jsonl.js';

const dir = mkdtempSync(path.join(tmpdir(), 'cookbook-ds-images-'));
const row = (image: string, answer: string) =>
  JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'image', image }, { type: 'text', text: 'Colour?' }] }, { role: 'assistant', content: answer }] });

beforeAll(async () => {
  mkdirSync(path.join(dir, 'img'));
  for (const [name, colour] of [['red', '#ff0000'], ['blue', '#0000ff']]) {
    await sharp({ create: { width: 64, height: 64, channels: 3, background: colour } }).png().toFile(path.join(dir, 'img', `${name}.png`));
  }
  writeFileSync(path.join(dir, 'good.jsonl'), [row('img/red.png', 'Red.'), row('img/blue.png', 'Blue.')].join('\n') + '\n');
  writeFileSync(path.join(dir, 'bad.jsonl'), [row('img/red.png', 'Red.'), row('img/missing.png', 'Blue.')].join('\n') + '\n');
});

describe('chat JSONL with images', () => {
  it('resolves image paths against the file and refuses a malformed image part', async () => {
    const [first] = await loadConversationsJsonl(path.join(dir, 'good.jsonl'), 'good.jsonl');
    const part = (first.messages[0].content as Array<{ type: string; image?: string }>)[0];
    expect(part.image).toBe(path.join(dir, 'img', 'red.png'));
    writeFileSync(path.join(dir, 'malformed.jsonl'), JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'image', image: 7 }] }] }) + '\n');
    await expect(loadConversationsJsonl(path.join(dir, 'malformed.jsonl'), 'malformed.jsonl')).rejects.toThrow(DataFormatError);
  });

  it('builds datums with one image chunk each when a batch loads', async () => {
    const { train } = await buildChatDatasets({ file_path: 'good.jsonl', batch_size: 2, train_on_what: 'last_assistant_message' }, 'tiny-qwen3-vl', { baseDir: dir });
    const batch = await train.batchAt(0, 0);
    expect(batch).toHaveLength(2);
    for (const d of batch) expect(d.model_input.chunks.filter((c) => c.type === 'image').map((c) => c.type === 'image' && c.expected_tokens)).toEqual([4]);
  });

  it('names the file, line and part of an image that cannot be read', async () => {
    const { train } = await buildChatDatasets({ file_path: 'bad.jsonl', batch_size: 2, train_on_what: 'last_assistant_message' }, 'tiny-qwen3-vl', { baseDir: dir });
    await expect(train.batchAt(0, 0)).rejects.toThrow(/bad\.jsonl:2 messages\[0\]\.content\[0\].*missing\.png/);
  });

  it('a text-only model refuses the rows, naming them', async () => {
    const { train } = await buildChatDatasets({ file_path: 'good.jsonl', batch_size: 2, train_on_what: 'last_assistant_message' }, 'tiny-qwen3', { baseDir: dir });
    await expect(train.batchAt(0, 0)).rejects.toThrow(/good\.jsonl:\d: qwen3 renders text only, but messages\[0\]\.content\[0\] is an image/);
  });
});
