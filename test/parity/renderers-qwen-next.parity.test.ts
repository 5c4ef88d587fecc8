// Renderer parity with the Python reference for the Qwen families after Qwen3: Qwen3-VL (the
// shipped Qwen3 tokenizer: same vocabulary and vision tokens), Qwen3.5/3.6 and Qwen3.8. The
// Qwen3.5 tokenizer cannot be had offline; every special token these renderers encode is already
// in Qwen3's, so the stand-in is Qwen3's tokenizer (listed tokens are kept, not duplicated).
import type { Tokenizer } from '../../src/cookbook/tokenizer.js';
import { QWEN3_5_RENDERERS } from '../../src/cookbook/renderers/qwen3-5.js';
import { QWEN3_8_RENDERERS } from '../../src/cookbook/renderers/qwen3-8.js';
import { QWEN3_VL_RENDERERS } from '../../src/cookbook/renderers/qwen3-vl.js';
import type { NamedRendererFactory } from '../../src/cookbook/renderers/registry.js';
import { describeRendererParity, type RendererUnderTest } from './renderer-parity.js';
import { standInTokenizer } from './tokenizers.js';

const qwen35Tokenizer = standInTokenizer('qwen3.5');

const entries = (table: Record<string, NamedRendererFactory>, tokenizer: RendererUnderTest['tokenizer']) =>
  Object.entries(table).map(([renderer, factory]) => ({
    renderer,
    tokenizer,
    make: (t: Tokenizer) => factory(renderer, t),
  }));

await describeRendererParity([
  ...entries(QWEN3_VL_RENDERERS, 'qwen3'),
  ...entries(QWEN3_5_RENDERERS, qwen35Tokenizer),
  ...entries(QWEN3_8_RENDERERS, qwen35Tokenizer),
]);
