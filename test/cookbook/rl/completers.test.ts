// §2.2 completers_test.py: max-token overrides, clamping, context-window cap; seeds per call.
import { describe, expect, it } from 'vitest';
import type { ModelInput, SampleResponse, SamplingParams, SamplingSession } from '../../../src/backends/types.js';
import { modelInputFromInts } from '../../../src/cookbook/model-input.js';
import { tinkerMessageCompleter, tinkerTokenCompleter } from '../../../src/cookbook/rl/completers.js';
import { deriveSeed, sequentialSeeds } from '../../../src/cookbook/rl/seeds.js';

class RecordingSession implements SamplingSession {
  readonly samplingSessionId = 'fake';
  params: SamplingParams[] = [];
  constructor(readonly tokens: number[] = [7, 8]) {}
  async sample(_prompt: ModelInput, _n: number, params: SamplingParams): Promise<SampleResponse> {
    this.params.push(params);
    return { sequences: [{ tokens: this.tokens, logprobs: [-0.5, -0.25], stop_reason: 'length' }] };
  }
  async computeLogprobs(): Promise<Array<number | null>> {
    return [null];
  }
}

const ob = modelInputFromInts([1, 2, 3, 4]);

describe('tinkerTokenCompleter', () => {
  it('uses its own max without an override, a smaller override wins, a larger one is clamped', async () => {
    const s = new RecordingSession();
    const c = tinkerTokenCompleter(s, { maxTokens: 100, seedFor: () => 1 });
    await c(ob, ['\n']);
    await c(ob, ['\n'], { maxTokens: 10 });
    await c(ob, ['\n'], { maxTokens: 1000 });
    expect(s.params.map((p) => p.max_tokens)).toEqual([100, 10, 100]);
  });
  it('caps at the context window and raises when the prompt fills it', async () => {
    const s = new RecordingSession();
    await tinkerTokenCompleter(s, { maxTokens: 100, contextWindow: 20, seedFor: () => 1 })(ob, ['\n'], { maxTokens: 50 });
    expect(s.params[0].max_tokens).toBe(16);
    await expect(tinkerTokenCompleter(s, { maxTokens: 100, contextWindow: 4, seedFor: () => 1 })(ob, ['\n'])).rejects.toThrow(/context window/);
  });
  it('passes stop, temperature and a seed per call; returns tokens, logprobs and stop reason', async () => {
    const s = new RecordingSession();
    const c = tinkerTokenCompleter(s, { maxTokens: 5, temperature: 0.7, seedFor: sequentialSeeds(42, 3) });
    const out = await c(ob, ['STOP']);
    await c(ob, ['STOP']);
    expect(out).toEqual({ tokens: [7, 8], maybeLogprobs: [-0.5, -0.25], stopReason: 'length' });
    expect(s.params[0]).toMatchObject({ stop: ['STOP'], temperature: 0.7, seed: deriveSeed(42, 3, 0) });
    expect(s.params[1].seed).toBe(deriveSeed(42, 3, 1));
    expect(s.params[0].seed).not.toBe(s.params[1].seed);
  });
});

describe('deriveSeed', () => {
  it('is deterministic, position-sensitive and in [0, 2^31)', () => {
    expect(deriveSeed(1, 2, 3)).toBe(deriveSeed(1, 2, 3));
    expect(new Set([deriveSeed(1, 2, 3), deriveSeed(1, 3, 2), deriveSeed(1, 2, 4), deriveSeed(2, 2, 3)]).size).toBe(4);
    for (let i = 0; i < 50; i++) {
      const s = deriveSeed(i, -i);
      expect(s >= 0 && s < 2 ** 31 && Number.isInteger(s)).toBe(true);
    }
  });
});

describe('tinkerMessageCompleter', () => {
  it('renders, samples and parses into an assistant message', async () => {
    const prompts: string[][] = [];
    const renderer = {
      getStopSequences: () => ['<end>'],
      buildGenerationPrompt: (msgs: Array<{ content: string }>) => {
        prompts.push(msgs.map((m) => m.content));
        return modelInputFromInts([1]);
      },
      parseResponse: (tokens: number[]) => ({ message: { role: 'assistant', content: `toks ${tokens.join(',')}` }, termination: 'malformed', ok: false }),
    };
    const s = new RecordingSession([3, 4]);
    const c = tinkerMessageCompleter(s, renderer as never, { maxTokens: 9, seedFor: () => 5 });
    expect(await c([{ role: 'user', content: 'hi' }])).toEqual({ role: 'assistant', content: 'toks 3,4' });
    expect(prompts).toEqual([['hi']]);
    expect(s.params[0]).toMatchObject({ stop: ['<end>'], max_tokens: 9, seed: 5, temperature: 1 });
  });
});
