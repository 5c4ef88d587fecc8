// Prompt distillation's data side (reference recipes/prompt_distillation/create_data.py): the
// teacher prompt, text and Qwen3 tokens, against goldens from the reference; the answer parse; the
// student's conversation line; queries, chunks and seeds; the config's defaults and errors.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PromptDistillConfigSchema } from '../../../src/cookbook/config/prompt-distill.js';
import { readQueries } from '../../../src/cookbook/distillation/prompt-distillation-queries.js';
import {
  chunkCount,
  chunkRange,
  extractAnswer,
  languageClassificationPrompt,
  parseQueries,
  studentConversationLine,
  teacherConversation,
  teacherQuerySeed,
} from '../../../src/cookbook/distillation/prompt-distillation.js';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import { getTokenizer } from '../../../src/cookbook/tokenizer.js';

const root = path.join(import.meta.dirname, '..', '..', '..');
const goldens = JSON.parse(readFileSync(path.join(root, 'test', 'fixtures', 'prompt_distill_goldens.json'), 'utf8')) as {
  renderer: string;
  stop: number[];
  cases: Array<{ query: string; prompt: string; tokens: number[] }>;
};

describe('the teacher prompt', () => {
  it.each(goldens.cases.map((c) => [c.query, c] as const))('%j: the reference\'s text and its qwen3 tokens', async (_q, c) => {
    expect(languageClassificationPrompt(c.query)).toBe(c.prompt);
    const renderer = getRenderer(goldens.renderer, await getTokenizer('Qwen/Qwen3-8B'));
    expect(modelInputToInts(renderer.buildGenerationPrompt(teacherConversation(c.query)))).toEqual(c.tokens);
    expect(renderer.getStopSequences()).toEqual(goldens.stop);
  });
});

describe('the answer and the student\'s example', () => {
  it('reads the reference\'s "Final Answer: (\\w+)": the first match, word characters of any script', () => {
    expect(extractAnswer('Reasoning…\nFinal Answer: de')).toBe('de');
    expect(extractAnswer('Final Answer: zh\nFinal Answer: en')).toBe('zh');
    expect(extractAnswer('Final Answer: ру!')).toBe('ру');
    expect(extractAnswer('Final answer: de')).toBeNull();
    expect(extractAnswer('Final Answer: ')).toBeNull();
  });
  it('a configured pattern: its first group, else the whole match', () => {
    expect(extractAnswer('  hola amigo', '^\\s*(\\S+)')).toBe('hola');
    expect(extractAnswer('label=fr', 'fr|de')).toBe('fr');
  });
  it('the student sees the bare query and the answer', () => {
    expect(JSON.parse(studentConversationLine('Hola, ¿qué tal?', 'es'))).toEqual({
      messages: [
        { role: 'user', content: 'Hola, ¿qué tal?' },
        { role: 'assistant', content: 'es' },
      ],
    });
  });
});

describe('queries, chunks and seeds', () => {
  it('one query a line, stripped, blank lines kept (readlines + strip)', () => {
    expect(parseQueries(' a \r\nb\n\nc\n')).toEqual(['a', 'b', '', 'c']);
    expect(parseQueries('x')).toEqual(['x']);
  });
  it('the shipped queries (data/multilingual.txt) are the default', () => {
    const queries = readQueries(PromptDistillConfigSchema.parse({ model_name: 'tiny-qwen3' }));
    expect(queries).toHaveLength(38);
    expect(queries[2]).toBe('La tienda de la esquina cierra temprano los domingos.');
  });
  it('chunks cover the queries in order, the last one partial', () => {
    expect(chunkCount(10, 4)).toBe(3);
    expect([0, 1, 2].map((k) => chunkRange(10, 4, k))).toEqual([{ start: 0, end: 4 }, { start: 4, end: 8 }, { start: 8, end: 10 }]);
    expect(() => chunkRange(10, 4, 3)).toThrow(/no chunk 3/);
  });
  it('a query\'s seed depends on the run seed and the query only', () => {
    expect(teacherQuerySeed(0, 5)).toBe(teacherQuerySeed(0, 5));
    expect(new Set([teacherQuerySeed(0, 0), teacherQuerySeed(0, 1), teacherQuerySeed(1, 0)]).size).toBe(3);
  });
});

describe('the prompt_distill config', () => {
  it('the reference\'s sampling parameters and output name by default', () => {
    expect(PromptDistillConfigSchema.parse({ model_name: 'tiny-qwen3' })).toMatchObject({
      max_tokens: 1000,
      temperature: 0.15,
      output_name: 'prompt_distillation_lang.jsonl',
      recipe_name: 'dataset_prompt_distillation',
    });
  });
  it('names the bad key', () => {
    const bad = (cfg: Record<string, unknown>) => PromptDistillConfigSchema.safeParse({ model_name: 'tiny-qwen3', ...cfg }).error?.issues[0];
    expect(bad({ answer_pattern: '(' })).toMatchObject({ path: ['answer_pattern'], message: 'not a valid regular expression' });
    expect(bad({ output_name: '../x.jsonl' })?.path).toEqual(['output_name']);
    expect(bad({ queries_per_chunk: 0 })?.path).toEqual(['queries_per_chunk']);
  });
  it('a missing queries file is a data error naming it', () => {
    expect(() => readQueries(PromptDistillConfigSchema.parse({ model_name: 'tiny-qwen3', dataset: { file_path: '/nonexistent/q.txt' } }))).toThrow(/\/nonexistent\/q\.txt: the queries file does not exist/);
  });
});
