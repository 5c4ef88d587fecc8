// Renderer parity with the Python reference for the families whose real tokenizers ship with
// this project (Llama 3, Qwen3) and role_colon; other families have their own files beside this.
import { describeRendererParity } from './renderer-parity.js';

await describeRendererParity([
  { renderer: 'role_colon', tokenizer: 'qwen3' },
  { renderer: 'role_colon', tokenizer: 'llama3' },
  { renderer: 'llama3', tokenizer: 'llama3' },
  { renderer: 'qwen3', tokenizer: 'qwen3' },
  { renderer: 'qwen3_disable_thinking', tokenizer: 'qwen3' },
  { renderer: 'qwen3_instruct', tokenizer: 'qwen3' },
]);
