// The custom sampling evaluator (cookbook-spec §7.5) with the real qwen3 renderer and tokenizer and
// an in-process sampler that records its requests: prompt, sampling params, grading, accuracy.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ModelInput, SampleResponse, SamplingParams, SamplingSession } from '../../../src/backends/types.js';
import { CustomSamplingEvaluatorSchema, EvaluatorsSchema, GRADERS, loadEvalExamples, runCustomSamplingEvaluator } from '../../../src/cookbook/eval/custom-sampling.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import { getTokenizer } from '../../../src/cookbook/tokenizer.js';

/** Answers every prompt with the text `reply(prompt)` followed by the end-of-turn token. */
function scriptedSampler(encode: (s: string) => number[], endToken: number, reply: (promptText: string) => string) {
  const calls: Array<{ prompt: ModelInput; params: SamplingParams }> = [];
  const decodePrompt = (p: ModelInput) => p.chunks.flatMap((c) => ('tokens' in c ? c.tokens : []));
  const session: SamplingSession & { calls: typeof calls; promptTokens: (i: number) => number[] } = {
    samplingSessionId: 'scripted',
    calls,
    promptTokens: (i) => decodePrompt(calls[i].prompt),
    async sample(prompt, _n, params): Promise<SampleResponse> {
      calls.push({ prompt, params });
      return { sequences: [{ tokens: [...encode(reply(JSON.stringify(decodePrompt(prompt)))), endToken], logprobs: null, stop_reason: 'stop' }] } as SampleResponse;
    },
    async computeLogprobs() {
      throw new Error('not used');
    },
  };
  return session;
}

describe('custom sampling evaluator', () => {
  it('graders: contains ignores case (the reference example), exact trims, math compares values', () => {
    expect(GRADERS.contains('The capital is PARIS.', 'Paris')).toBe(true);
    expect(GRADERS.contains('Berlin', 'Paris')).toBe(false);
    expect(GRADERS.exact('  42\n', '42')).toBe(true);
    expect(GRADERS.exact('42.', '42')).toBe(false);
    expect(GRADERS.math('so the answer is \\boxed{\\frac{1}{2}}', '0.5')).toBe(true);
    expect(GRADERS.math('1/2', '\\frac{1}{2}')).toBe(true);
    expect(GRADERS.math('\\boxed{3}', '4')).toBe(false);
  });

  it('samples one reply per example from a single user message, with the reference parameters, and reports accuracy', async () => {
    const tokenizer = await getTokenizer('tiny-qwen3');
    const renderer = getRenderer('qwen3', tokenizer);
    const endToken = tokenizer.encode('<|im_end|>', { addSpecialTokens: false })[0];
    const sampler = scriptedSampler((s) => tokenizer.encode(s, { addSpecialTokens: false }), endToken, () => 'I think it is Paris');
    const evaluator = CustomSamplingEvaluatorSchema.parse({ kind: 'custom_sampling', file_path: 'unused' });
    const examples = [
      { input: 'What is the capital of France?', output: 'paris' },
      { input: 'What is the capital of Germany?', output: 'Berlin' },
      { input: 'What is the capital of Italy?', output: 'Rome' },
    ];
    const metrics = await runCustomSamplingEvaluator(evaluator, examples, sampler, renderer, (i) => 100 + i);
    expect(metrics).toEqual({ accuracy: 1 / 3 });

    expect(sampler.calls).toHaveLength(3);
    for (const [i, call] of sampler.calls.entries()) {
      expect(call.params).toEqual({ max_tokens: 100, temperature: 0.7, top_p: 1.0, stop: renderer.getStopSequences(), seed: 100 + i });
      const expected = renderer.buildGenerationPrompt([{ role: 'user', content: examples[i].input }]);
      expect(sampler.promptTokens(i)).toEqual(expected.chunks.flatMap((c) => ('tokens' in c ? c.tokens : [])));
    }
    expect(await runCustomSamplingEvaluator({ ...evaluator, name: 'qa' }, [], sampler, renderer, () => 0)).toEqual({ 'qa/accuracy': 0.0 });
  });

  it('examples load from JSONL, and a bad row is named by file and line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eval-'));
    const good = join(dir, 'good.jsonl');
    writeFileSync(good, '{"input": "a", "output": "b"}\n\n{"input": "c", "output": "d"}\n');
    expect(await loadEvalExamples(good)).toEqual([{ input: 'a', output: 'b' }, { input: 'c', output: 'd' }]);
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"input": "a", "output": "b"}\n{"input": "c"}\n');
    await expect(loadEvalExamples(bad)).rejects.toThrow(`${bad}:2: "output" must be a string`);
    const broken = join(dir, 'broken.jsonl');
    writeFileSync(broken, '{"input": "a", "output": "b"\n');
    await expect(loadEvalExamples(broken)).rejects.toThrow(`${broken}:1: invalid JSON`);
    const empty = join(dir, 'empty.jsonl');
    writeFileSync(empty, '\n');
    await expect(loadEvalExamples(empty)).rejects.toThrow('no evaluation examples');
    await expect(loadEvalExamples(join(dir, 'missing.jsonl'))).rejects.toThrow('no such file');
  });

  it('two evaluators that would report the same metric are a config error', () => {
    const e = { kind: 'custom_sampling', file_path: 'x.jsonl' };
    expect(EvaluatorsSchema.safeParse([e, e]).success).toBe(false);
    expect(EvaluatorsSchema.safeParse([e, { ...e, name: 'b' }]).success).toBe(true);
    expect(CustomSamplingEvaluatorSchema.safeParse({ ...e, grader: 'regex' }).success).toBe(false);
  });
});
