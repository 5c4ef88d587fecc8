// Renderer parity with the Python reference for the DeepSeek families. V3 uses DeepSeek-V3's own
// shipped tokenizer (it predates reasoning: `<think>` is ordinary text there, on both sides).
// V4.1's tokenizer cannot be had offline: it is DeepSeek-V3's plus the markers the V4.1 renderer
// and template use as single tokens (`<｜System｜>`, `<think>`, `</think>`, the DSML marker), added
// as non-special tokens like DeepSeek's own `<｜User｜>` / `<｜Assistant｜>`.
import type { NamedRendererFactory } from '../../src/cookbook/renderers/registry.js';
import { DEEPSEEK_V3_RENDERERS } from '../../src/cookbook/renderers/deepseek-v3.js';
import { DEEPSEEK_V4_1_RENDERERS } from '../../src/cookbook/renderers/deepseek-v4-1.js';
import { describeRendererParity, type RendererUnderTest } from './renderer-parity.js';
import { augmentedTokenizerDir } from './tokenizers.js';

const v4_1Tokenizer = {
  label: 'deepseek_v3+v4.1 tokens',
  dir: augmentedTokenizerDir({
    base: 'deepseek_v3',
    tokens: ['<｜System｜>', '<think>', '</think>', '｜DSML｜'].map((content) => ({ content, special: false })),
  }),
};

const entries = (table: Record<string, NamedRendererFactory>, tokenizer: RendererUnderTest['tokenizer']) =>
  Object.entries(table).map(([renderer, make]): RendererUnderTest => ({
    renderer,
    tokenizer,
    make: (t) => make(renderer, t),
  }));

await describeRendererParity([
  ...entries(DEEPSEEK_V3_RENDERERS, 'deepseek_v3'),
  ...entries(DEEPSEEK_V4_1_RENDERERS, v4_1Tokenizer),
]);
