// The renderer parity harness: for each renderer × tokenizer, the reference renders and parses a
// fixed set of conversations (reference_cases.py, topic "renderer") and every case is compared
// with this project's renderer: supervised tokens and weights per train_on_what, generation
// prompts, stop sequences, the extension property and the parse of sampled completions.
import { describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import type { Message, Renderer, TrainOnWhat } from '../../src/cookbook/renderers/types.js';
import { getTokenizer, shippedTokenizerDir, type Family, type Tokenizer } from '../../src/cookbook/tokenizer.js';
import { outcome, referenceCases, sameOutcome, type Outcome, type ReferenceCase } from './reference.js';

export interface RendererUnderTest {
  renderer: string;
  /** A shipped tokenizer, or a tokenizer folder (e.g. from augmentedTokenizerDir) with a label. */
  tokenizer: Family | { dir: string; label: string };
  /** How this project builds the renderer (default: the registry). */
  make?: (tokenizer: Tokenizer) => Renderer;
}

const tokenizerDir = (t: RendererUnderTest['tokenizer']) => (typeof t === 'string' ? shippedTokenizerDir(t) : t.dir);
const tokenizerLabel = (t: RendererUnderTest['tokenizer']) => (typeof t === 'string' ? t : t.label);

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

function runCase(renderer: Renderer, c: ReferenceCase<Input, Outcome>): Outcome {
  const { input } = c;
  const kind = c.id.split('/')[0];
  return outcome((): unknown => {
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
}

/** Declares one describe block per renderer × tokenizer, one test per reference case. */
export async function describeRendererParity(under: RendererUnderTest[]): Promise<void> {
  const results = await referenceCases(
    under.map((u) => ({ topic: 'renderer', args: { renderer: u.renderer, tokenizer_dir: tokenizerDir(u.tokenizer) } })),
  );
  describe.each(under.map((u, i) => [`${u.renderer} × ${tokenizerLabel(u.tokenizer)}`, u, results[i]] as const))(
    'renderer %s',
    (label, u, cases) => {
      it.each((cases as ReferenceCase<Input, Outcome>[]).map((c) => [c.id, c] as const))('%s', async (_id, c) => {
        const tokenizer = await getTokenizer(`parity:${label}`, tokenizerDir(u.tokenizer));
        const renderer = u.make ? u.make(tokenizer) : getRenderer(u.renderer, tokenizer);
        const ts = runCase(renderer, c);
        const { ts: got, ref } = sameOutcome(withParserWordingHidden(ts) as Outcome, withParserWordingHidden(c.expected) as Outcome);
        expect(
          got,
          `${label} ${c.id}\ninput: ${JSON.stringify(c.input)}\nreference: ${JSON.stringify(c.expected)}\nours: ${JSON.stringify(ts)}`,
        ).toEqual(ref);
      });
    },
  );
}
