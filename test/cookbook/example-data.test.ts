// The shipped example datasets: well-formed, the expected size, short, and regenerable.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildChatDatasets } from '../../src/cookbook/supervised/dataset.js';
import { loadConversationsJsonl } from '../../src/cookbook/supervised/jsonl.js';
import { modelInputLength } from '../../src/cookbook/model-input.js';

const root = new URL('../../', import.meta.url);

describe('example datasets', () => {
  it('are valid conversations of the advertised size', async () => {
    expect(await loadConversationsJsonl(new URL('data/example_chat.jsonl', root).pathname)).toHaveLength(300);
    expect(await loadConversationsJsonl(new URL('data/example_chat_small.jsonl', root).pathname)).toHaveLength(24);
  });

  it('render to short sequences for both tokenizers', async () => {
    for (const model of ['tiny-qwen3', 'tiny-llama3']) {
      const { train } = await buildChatDatasets({ builtin: 'example_chat', batch_size: 50 }, model);
      expect(train.length).toBe(6);
      for (let b = 0; b < train.length; b++) {
        for (const d of train.getBatch(b)) expect(modelInputLength(d.model_input)).toBeLessThan(128);
      }
    }
  });

  it('are exactly what scripts/gen-example-chat.mjs generates', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'example-chat-'));
    execFileSync(process.execPath, [new URL('scripts/gen-example-chat.mjs', root).pathname, out]);
    for (const f of ['example_chat.jsonl', 'example_chat_small.jsonl']) {
      expect(readFileSync(path.join(out, f)).equals(readFileSync(new URL(`data/${f}`, root)))).toBe(true);
    }
  });
});
