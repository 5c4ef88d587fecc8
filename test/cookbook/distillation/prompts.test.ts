// Prompt-only datasets (§5.1): parsing with file:line errors, truncation, batching, the composite.
import { beforeAll, describe, expect, it } from 'vitest';
import { compositeBatchDatasets, compositeLength } from '../../../src/cookbook/distillation/plan.js';
import { CompositeDataset, loadPromptsJsonl, parsePromptsJsonl, PromptOnlyDataset, PromptOnlyEnv, resolvePromptFile, truncatePrompt } from '../../../src/cookbook/distillation/prompts.js';
import { planShards, teacherConversationLine, teacherSampleSeed } from '../../../src/cookbook/distillation/teacher-samples.js';
import { PromptDatasetConfigSchema } from '../../../src/cookbook/distillation/prompts.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';

let tok: Tokenizer;
let renderer: Renderer;
beforeAll(async () => {
  tok = await getTokenizer('tiny-qwen3');
  renderer = getRenderer('role_colon', tok);
});

describe('parsePromptsJsonl', () => {
  it('takes the messages before the first assistant message, and question rows', () => {
    const rows = parsePromptsJsonl(
      [
        JSON.stringify({ messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'q1' }, { role: 'assistant', content: 'a' }, { role: 'user', content: 'q2' }] }),
        '',
        JSON.stringify({ question: 'What is 2+2?' }),
      ].join('\n'),
      'p.jsonl',
    );
    expect(rows).toEqual([
      { messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'q1' }], line: 1 },
      { messages: [{ role: 'user', content: 'What is 2+2?' }], line: 3 },
    ]);
  });

  it('names file and line in errors', () => {
    expect(() => parsePromptsJsonl('{"messages": [{"role": "user", "content": "x"}]}\n{oops', 'p.jsonl')).toThrow(/^p\.jsonl:2: invalid JSON/);
    expect(() => parsePromptsJsonl('{"messages": [{"role": "assistant", "content": "x"}]}', 'p.jsonl')).toThrow(/p\.jsonl:1: .*must end with a user message/);
    expect(() => parsePromptsJsonl('{"text": "x"}', 'p.jsonl')).toThrow(/p\.jsonl:1: missing "messages"/);
    expect(() => parsePromptsJsonl('\n\n', 'p.jsonl')).toThrow(/no prompts/);
  });

  it('loads the shipped prompt file', async () => {
    const { absPath, displayPath } = resolvePromptFile(PromptDatasetConfigSchema.parse({}));
    const rows = await loadPromptsJsonl(absPath, displayPath);
    expect(rows.length).toBe(24);
    expect(rows.every((r) => r.messages[r.messages.length - 1].role === 'user')).toBe(true);
  });
});

describe('prompt datasets', () => {
  it('truncates the last user message by tokens', () => {
    const long = [{ role: 'user' as const, content: 'one two three four five six seven eight nine ten' }];
    const cut = truncatePrompt(long, tok, 3);
    expect(tok.encode(cut[0].content as string, { addSpecialTokens: false })).toHaveLength(3);
    expect(truncatePrompt(long, tok, 1000)).toBe(long);
  });

  it('PromptOnlyEnv renders the prompt and ends with reward 0', async () => {
    const env = new PromptOnlyEnv([{ role: 'user', content: 'hi' }], renderer);
    const { ob } = (await env.initialObservation()) as { ob: Parameters<typeof modelInputToInts>[0] };
    expect(modelInputToInts(ob)).toEqual(modelInputToInts(renderer.buildGenerationPrompt([{ role: 'user', content: 'hi' }])));
    const step = await env.step();
    expect(step).toMatchObject({ reward: 0, episodeDone: true, metrics: {} });
  });

  it('batches ceil(n/batch) groups, and the composite concatenates with dataset indices', async () => {
    const prompts = (n: number) => Array.from({ length: n }, (_, i) => [{ role: 'user' as const, content: `q${i}` }]);
    const a = new PromptOnlyDataset(prompts(5), renderer, 2, 3, 'a');
    const b = new PromptOnlyDataset(prompts(7), renderer, 1, 2, 'b');
    expect(a.length).toBe(3);
    expect(a.getBatch(2)).toHaveLength(1);
    expect((await a.getBatch(0)[0].makeEnvs()).length).toBe(3);
    expect(a.getBatch(0)[0].loggingTags()).toEqual(['a']);
    const c = new CompositeDataset([a, b]);
    expect(c.length).toBe(3);
    expect(c.getBatch(2).datasetIndices).toEqual([0, 1]);
    expect(c.getBatch(0).datasetIndices).toEqual([0, 0, 1]);
    // The workflow's arithmetic agrees with the datasets.
    expect(compositeLength([5, 7], [2, 1])).toBe(3);
    for (let i = 0; i < 3; i++) expect(compositeBatchDatasets([5, 7], [2, 1], i)).toEqual(c.getBatch(i).datasetIndices);
  });
});

describe('teacher sampling shards', () => {
  it('shards every dataset in order and seeds by position', () => {
    const shards = planShards([3, 2], 2);
    expect(shards).toEqual([
      [{ dataset: 0, prompt: 0 }, { dataset: 0, prompt: 1 }],
      [{ dataset: 0, prompt: 2 }, { dataset: 1, prompt: 0 }],
      [{ dataset: 1, prompt: 1 }],
    ]);
    const s = teacherSampleSeed(7, { dataset: 1, prompt: 0 }, 0);
    expect(teacherSampleSeed(7, { dataset: 1, prompt: 0 }, 0)).toBe(s);
    expect(teacherSampleSeed(7, { dataset: 1, prompt: 0 }, 1)).not.toBe(s);
    expect(teacherSampleSeed(8, { dataset: 1, prompt: 0 }, 0)).not.toBe(s);
  });

  it('writes SFT conversation lines', () => {
    const line = teacherConversationLine([{ role: 'user', content: 'q' }], { role: 'assistant', content: 'a' });
    expect(JSON.parse(line)).toEqual({ messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }] });
  });
});
