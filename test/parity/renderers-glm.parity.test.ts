// Renderer parity with the Python reference for the GLM-5.3 family. GLM's tokenizer cannot be had
// offline, so both sides load Qwen3's tokenizer plus every special token the GLM renderer encodes.
import { GLM5_3_RENDERERS } from '../../src/cookbook/renderers/glm5-3.js';
import { describeRendererParity } from './renderer-parity.js';
import { augmentedTokenizerDir } from './tokenizers.js';

const glmTokenizer = {
  label: 'qwen3+glm',
  dir: augmentedTokenizerDir({
    base: 'qwen3',
    tokens: [
      '[gMASK]',
      '<sop>',
      '<|system|>',
      '<|user|>',
      '<|assistant|>',
      '<|observation|>',
      '<|endoftext|>',
      // GLM marks its think/tool markup tokens as added but not special.
      ...['<think>', '</think>', '<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>'].map(
        (content) => ({ content, special: false }),
      ),
      ...['<arg_key>', '</arg_key>', '<arg_value>', '</arg_value>'].map((content) => ({ content, special: false })),
    ],
    config: { eos_token: '<|endoftext|>' },
  }),
};

await describeRendererParity(
  Object.entries(GLM5_3_RENDERERS).map(([renderer, factory]) => ({
    renderer,
    tokenizer: glmTokenizer,
    make: (t) => factory(renderer, t),
  })),
);
