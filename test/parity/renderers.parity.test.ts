// Renderer parity with the Python reference, case by case: every renderer × shipped tokenizer ×
// conversation × train_on_what (tokens and weights), generation prompts, stop sequences and the
// parse of sampled completions. The reference produces every expected value at test time.
import { describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import type { Message, TrainOnWhat } from '../../src/cookbook/renderers/types.js';
import { getShippedTokenizer, shippedTokenizerDir, type Family } from '../../src/cookbook/tokenizer.js';
import { outcome, referenceCases, sameOutcome, type Outcome, type ReferenceCase } from './reference.js';

/** Renderer × the shipped tokenizer it is checked with. */
export const RENDERER_PAIRS: Array<[string, Family]> = [
  ['role_colon', 'qwen3'],
  ['role_colon', 'llama3'],
  ['llama3', 'llama3'],
  ['qwen3', 'qwen3'],
  ['qwen3_disable_thinking', 'qwen3'],
  ['qwen3_instruct', 'qwen3'],
];

const results = await referenceCases(
  RENDERER_PAIRS.map(([renderer, family]) => ({
    topic: 'renderer',
    args: { renderer, tokenizer_dir: shippedTokenizerDir(family) },
  })),
);

/**
 * A JSON parse error's wording is the language's own (Python's json vs JSON.parse): compare the
 * category the renderer puts in front, not the parser's sentence.
 */
function withParserWordingHidden(x: unknown): unknown {
  return JSON.parse(JSON.stringify(x), (key, value) =>
    key === 'error' && typeof value === 'string' && value.startsWith('Invalid JSON: ') ? 'Invalid JSON: …' : value,
  );
}

type Input = { messages?: Message[]; train_on_what?: TrainOnWhat; prefill?: string; tokens?: number[] };

describe.each(RENDERER_PAIRS.map((pair, i) => [`${pair[0]} × ${pair[1]}`, pair, results[i]] as const))(
  'renderer %s',
  (_label, [rendererName, family], cases) => {
    it.each((cases as ReferenceCase<Input, Outcome>[]).map((c) => [c.id, c] as const))('%s', async (_id, c) => {
      const renderer = getRenderer(rendererName, await getShippedTokenizer(family));
      const { input } = c;
      const kind = c.id.split('/')[0];
      const ts = outcome((): unknown => {
        switch (kind) {
          case 'meta':
            return { stop_sequences: renderer.getStopSequences(), has_extension_property: renderer.hasExtensionProperty };
          case 'supervised': {
            const ex = renderer.buildSupervisedExample(input.messages!, input.train_on_what);
            return { tokens: modelInputToInts(ex.modelInput), weights: ex.weights };
          }
          case 'generation_prompt':
            return modelInputToInts(renderer.buildGenerationPrompt(input.messages!, 'assistant', input.prefill));
          case 'parse': {
            const { message, termination } = renderer.parseResponse(input.tokens!);
            return { message: JSON.parse(JSON.stringify(message)), termination };
          }
          default:
            throw new Error(`unknown case kind ${kind}`);
        }
      });
      const { ts: got, ref } = sameOutcome(withParserWordingHidden(ts) as Outcome, withParserWordingHidden(c.expected) as Outcome);
      expect(got, `${rendererName} × ${family} ${c.id}\ninput: ${JSON.stringify(input)}\nreference: ${JSON.stringify(c.expected)}\nours: ${JSON.stringify(ts)}`).toEqual(ref);
    });
  },
);
