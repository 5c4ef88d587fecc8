// Chat datasets (spec §1.4): JSONL loading errors, shuffle/split, per-epoch numpy shuffling,
// lazy datum construction.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DataFormatError, DataValidationError } from '../../src/cookbook/errors.js';
import { Qwen3Renderer, registerRenderer } from '../../src/cookbook/renderers/index.js';
import type { Message } from '../../src/cookbook/renderers/types.js';
import { numpyPermutation } from '../../src/cookbook/shuffle.js';
import { shippedTokenizerDir } from '../../src/cookbook/tokenizer.js';
import { ChatDatasetConfigSchema, buildChatDatasets, resolveDatasetFile } from '../../src/cookbook/supervised/dataset.js';
import { conversationToDatum } from '../../src/cookbook/supervised/datum.js';
import { loadConversationsJsonl, parseConversationsJsonl } from '../../src/cookbook/supervised/jsonl.js';

const dir = mkdtempSync(path.join(tmpdir(), 'cookbook-ds-'));
function writeJsonl(name: string, lines: string[]): string {
  writeFileSync(path.join(dir, name), lines.join('\n') + '\n');
  return name;
}
const row = (q: string, a: string) => JSON.stringify({ messages: [{ role: 'user', content: q }, { role: 'assistant', content: a }] });

let renders = 0;
beforeAll(() => {
  registerRenderer('counting_qwen3', (tok) => {
    const r = new Qwen3Renderer('counting_qwen3', tok);
    const inner = r.buildSupervisedExample.bind(r);
    r.buildSupervisedExample = (m, w) => {
      renders++;
      return inner(m, w);
    };
    return r;
  });
});

describe('ChatDatasetConfigSchema', () => {
  it('applies defaults and needs exactly one source', () => {
    expect(ChatDatasetConfigSchema.parse({ builtin: 'example_chat', batch_size: 8 })).toEqual({
      builtin: 'example_chat',
      batch_size: 8,
      test_size: 0,
      shuffle_seed: 0,
      max_length: null,
    });
    const both = ChatDatasetConfigSchema.safeParse({ builtin: 'example_chat', file_path: 'x.jsonl', batch_size: 8 });
    expect(both.success).toBe(false);
    expect(both.error?.issues[0].path).toEqual(['builtin']);
    const neither = ChatDatasetConfigSchema.safeParse({ batch_size: 8 });
    expect(neither.error?.issues[0].path).toEqual(['file_path']);
    expect(ChatDatasetConfigSchema.safeParse({ builtin: 'example_chat', batch_size: 8, bogus: 1 }).success).toBe(false);
    expect(ChatDatasetConfigSchema.safeParse({ builtin: 'example_chat', batch_size: 8, train_on_what: 'everything' }).success).toBe(false);
    expect(ChatDatasetConfigSchema.parse({ builtin: 'example_chat', batch_size: 8, train_on_what: 'last_assistant_message' }).train_on_what).toBe(
      'last_assistant_message',
    );
  });

  it('resolves relative file paths against the base dir', () => {
    const cfg = ChatDatasetConfigSchema.parse({ file_path: 'data/x.jsonl', batch_size: 1 });
    expect(resolveDatasetFile(cfg, '/base')).toEqual({ absPath: '/base/data/x.jsonl', displayPath: 'data/x.jsonl' });
  });
});

describe('JSONL loading errors name the file and line', () => {
  const bad = (lines: string[], re: RegExp) => {
    expect(() => parseConversationsJsonl(lines.join('\n'), 'data/x.jsonl')).toThrow(DataFormatError);
    expect(() => parseConversationsJsonl(lines.join('\n'), 'data/x.jsonl')).toThrow(re);
  };
  const ok = row('q', 'a');

  it('missing "messages"', () => bad([ok, ok, '{"conversation": []}'], /^data\/x\.jsonl:3: missing "messages"/));
  it('invalid JSON', () => bad([ok, '{"messages": [', ok], /^data\/x\.jsonl:2: invalid JSON/));
  it('not an object', () => bad(['[1, 2]'], /^data\/x\.jsonl:1: expected a JSON object/));
  it('message without role', () => bad([ok, '{"messages": [{"content": "x"}]}'], /^data\/x\.jsonl:2: message 0 has no "role"/));
  it('message without content', () => bad(['{"messages": [{"role": "user"}]}'], /:1: message 0 has no "content"/));
  it('unknown role', () => bad(['{"messages": [{"role": "bot", "content": "x"}]}'], /:1: message 0 role "bot" is not one of system, user, assistant, tool/));
  it('bad content', () => bad(['{"messages": [{"role": "user", "content": 3}]}'], /:1: message 0 "content" must be a string or a list/));
  it('empty messages', () => bad(['{"messages": []}'], /:1: "messages" is empty/));
  it('empty file', () => bad(['', '  '], /^data\/x\.jsonl: no conversations/));

  it('skips blank lines and keeps real line numbers', () => {
    const rows = parseConversationsJsonl([ok, '', ok].join('\n'), 'f');
    expect(rows.map((r) => r.line)).toEqual([1, 3]);
  });

  it('a missing file', async () => {
    await expect(loadConversationsJsonl(path.join(dir, 'nope.jsonl'), 'nope.jsonl')).rejects.toThrow(/^nope\.jsonl: no such file/);
  });
});

describe('buildChatDatasets', () => {
  it('shuffles with shuffle_seed, holds out test_size rows as one batch, batches the rest', async () => {
    const rows = Array.from({ length: 10 }, (_, i) => row(`q${i}`, `a${i}`));
    const file = writeJsonl('ten.jsonl', rows);
    const { train, test, renderer, tokenizer } = await buildChatDatasets(
      { file_path: file, batch_size: 3, test_size: 2, shuffle_seed: 5, max_length: null },
      'tiny-qwen3',
      { baseDir: dir },
    );
    expect(renderer.name).toBe('qwen3');
    expect(tokenizer.name).toBe('qwen3');
    const perm = numpyPermutation(5, 10);
    const msgs = (i: number): Message[] => JSON.parse(rows[i]).messages;
    const datumOf = (i: number) => conversationToDatum(msgs(i), renderer, null);

    expect(test?.length).toBe(1);
    expect(test?.getBatch(0)).toEqual([datumOf(perm[0]), datumOf(perm[1])]);

    // 8 train rows, batch 3 → 2 batches (partial batch dropped).
    expect(train.length).toBe(2);
    const trainOrig = perm.slice(2);
    expect(train.getBatch(1)).toEqual(trainOrig.slice(3, 6).map(datumOf));
    train.setEpoch(0);
    const e0 = numpyPermutation(0, 8).map((k) => trainOrig[k]);
    expect(train.getBatch(0)).toEqual(e0.slice(0, 3).map(datumOf));
    train.setEpoch(1);
    const e1 = numpyPermutation(1, 8).map((k) => trainOrig[k]);
    expect(train.getBatch(1)).toEqual(e1.slice(3, 6).map(datumOf));
    expect(() => train.getBatch(2)).toThrow(RangeError);
  });

  it('mean reduction by default: each datum weighs 1 in total', async () => {
    const { train } = await buildChatDatasets({ builtin: 'example_chat_small', batch_size: 8 }, 'tiny-qwen3');
    for (const d of train.getBatch(0)) {
      const s = d.loss_fn_inputs.weights.data.reduce((a, b) => a + b, 0);
      expect(Math.abs(s - 1)).toBeLessThan(1e-5);
      expect(d.loss_fn_inputs.weights.data.length).toBe(d.loss_fn_inputs.target_tokens.data.length);
    }
  });

  it('test_size ≥ rows means no test set', async () => {
    const { test, train } = await buildChatDatasets({ builtin: 'example_chat_small', batch_size: 4, test_size: 24 }, 'tiny-qwen3');
    expect(test).toBeUndefined();
    expect(train.length).toBe(6);
  });

  it('builds datums lazily, once per row', async () => {
    renders = 0;
    const { train } = await buildChatDatasets(
      { builtin: 'example_chat_small', batch_size: 4, renderer_name: 'counting_qwen3' },
      'tiny-qwen3',
    );
    expect(renders).toBe(0);
    train.setEpoch(0);
    train.getBatch(2);
    expect(renders).toBe(4);
    train.getBatch(2);
    train.setEpoch(0);
    train.getBatch(2);
    expect(renders).toBe(4);
  });

  it('a conversation with nothing to train on is reported with its line', async () => {
    const file = writeJsonl('noasst.jsonl', [row('q', 'a'), JSON.stringify({ messages: [{ role: 'user', content: 'only me' }] })]);
    await expect(buildChatDatasets({ file_path: file, batch_size: 1 }, 'tiny-qwen3', { baseDir: dir })).rejects.toThrow(
      /^noasst\.jsonl:2: conversation has no assistant message/,
    );
    const last = writeJsonl('lastuser.jsonl', [JSON.stringify({ messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }, { role: 'user', content: 'q2' }] })]);
    await expect(
      buildChatDatasets({ file_path: last, batch_size: 1, train_on_what: 'last_assistant_message' }, 'tiny-qwen3', { baseDir: dir }),
    ).rejects.toThrow(/^lastuser\.jsonl:1: the last message is user/);
  });

  it('truncation that leaves no trainable token is reported with its line', async () => {
    const file = writeJsonl('long.jsonl', [row('a long question with many many words in it', 'x')]);
    const { train } = await buildChatDatasets({ file_path: file, batch_size: 1, max_length: 4 }, 'tiny-qwen3', { baseDir: dir });
    expect(() => train.getBatch(0)).toThrow(DataValidationError);
    expect(() => train.getBatch(0)).toThrow(/^long\.jsonl:1: conversation has no trainable tokens after truncation to max_length=4/);
  });

  it('too few rows for one batch is an error', async () => {
    await expect(buildChatDatasets({ builtin: 'example_chat_small', batch_size: 25 }, 'tiny-qwen3')).rejects.toThrow(
      /24 training conversations .* fewer than batch_size 25/,
    );
  });

  it('uses the recommended renderer for llama and an explicit renderer_name', async () => {
    const a = await buildChatDatasets({ builtin: 'example_chat_small', batch_size: 8 }, 'tiny-llama3');
    expect(a.renderer.name).toBe('llama3');
    const b = await buildChatDatasets({ builtin: 'example_chat_small', batch_size: 8, renderer_name: 'role_colon' }, 'tiny-llama3');
    expect(b.renderer.name).toBe('role_colon');
  });

  it('applies the top-level renderer_name to the training data, and refuses a conflicting dataset one', async () => {
    const top = await buildChatDatasets({ builtin: 'example_chat_small', batch_size: 8 }, { model_name: 'tiny-llama3', renderer_name: 'role_colon' });
    expect(top.renderer.name).toBe('role_colon');
    const datum = top.train.getBatch(0)[0];
    const text = top.tokenizer.decode(datum.model_input.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : [])));
    expect(text).toContain('User:');
    expect(text).not.toContain('<|start_header_id|>');
    const same = await buildChatDatasets(
      { builtin: 'example_chat_small', batch_size: 8, renderer_name: 'role_colon' },
      { model_name: 'tiny-llama3', renderer_name: 'role_colon' },
    );
    expect(same.renderer.name).toBe('role_colon');
    await expect(
      buildChatDatasets({ builtin: 'example_chat_small', batch_size: 8, renderer_name: 'llama3' }, { model_name: 'tiny-llama3', renderer_name: 'role_colon' }),
    ).rejects.toThrow(/renderer_name is "role_colon" but dataset.renderer_name is "llama3"/);
  });

  it('tokenizer_path serves a model whose tokenizer is not shipped', async () => {
    const model = { model_name: 'acme/House-Model-7B', renderer_name: 'qwen3', tokenizer_path: shippedTokenizerDir('qwen3') };
    const { renderer, tokenizer } = await buildChatDatasets({ builtin: 'example_chat_small', batch_size: 8 }, model);
    expect(renderer.name).toBe('qwen3');
    expect(tokenizer.tokenToId('<|im_end|>')).toBe(151645);
    await expect(buildChatDatasets({ builtin: 'example_chat_small', batch_size: 8 }, { ...model, tokenizer_path: dir })).rejects.toThrow(
      /tokenizer_path: .* is not a folder holding tokenizer.json/,
    );
    await expect(buildChatDatasets({ builtin: 'example_chat_small', batch_size: 8 }, { model_name: 'moonshotai/Kimi-K2.6' })).rejects.toThrow(
      /No offline tokenizer for model "moonshotai\/Kimi-K2.6".*set tokenizer_path/,
    );
  });
});
