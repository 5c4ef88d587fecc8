// Renderer parity with the Python reference for the Nemotron-3 family (3 Nano / 3 Super and the
// Ultra format). Nemotron's tokenizer cannot be had offline: the stand-in is Qwen3's tokenizer plus
// every special token these renderers encode (most are already Qwen3's and are kept, not
// duplicated; `<img>`/`</img>` frame images), with `<|im_end|>` as eos, as Nemotron-3's.
import type { Tokenizer } from '../../src/cookbook/tokenizer.js';
import { NEMOTRON3_RENDERERS } from '../../src/cookbook/renderers/nemotron3.js';
import { describeRendererParity } from './renderer-parity.js';
import { standInTokenizer } from './tokenizers.js';

const nemotronTokenizer = standInTokenizer('nemotron3');

await describeRendererParity(
  Object.entries(NEMOTRON3_RENDERERS).map(([renderer, factory]) => ({
    renderer,
    tokenizer: nemotronTokenizer,
    make: (t: Tokenizer) => factory(renderer, t),
  })),
);
