// A ServedModel whose "sampler" writes what a tool-using agent model would (the random tiny model
// never writes a tool call): a tool call in Qwen3's format with its reasoning until the prompt holds
// a tool result, then a plain answer. The server, the renderer's parsing and the client SDKs around
// it are the real ones; every sampling call is recorded.
import type { ModelInput, SampledSequence, SamplingParams } from '../../src/backends/types.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import type { Tokenizer } from '../../src/cookbook/tokenizer.js';
import type { ServedModel } from '../../src/serve/served-model.js';

export const AGENT_CALL = '<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
export const AGENT_ANSWER = 'It is sunny in Paris.';

export interface ScriptedCall {
  prompt: ModelInput;
  params: SamplingParams;
}

export const promptText = (tokenizer: Tokenizer, p: ModelInput) => tokenizer.decode(p.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : [])));

export function sequenceOf(tokenizer: Tokenizer, body: string, extra: number[] = [], stop_reason: 'stop' | 'length' = 'stop'): SampledSequence {
  const tokens = [...tokenizer.encode(body, { addSpecialTokens: false }), ...extra];
  return { tokens, logprobs: tokens.map((_, i) => -0.1 * (i + 1)), stop_reason };
}

/** A model answering `script(prompt text)`; by default the weather agent above. */
export function scriptedModel(
  tokenizer: Tokenizer,
  script?: (prompt: string) => SampledSequence,
  opts: { renderer?: string; maxContextLength?: number } = {},
): { model: ServedModel; calls: ScriptedCall[] } {
  const imEnd = tokenizer.tokenToId('<|im_end|>');
  const agent = (prompt: string) =>
    prompt.includes('<tool_response>') ? sequenceOf(tokenizer, `<think>\n\n</think>\n\n${AGENT_ANSWER}`, [imEnd]) : sequenceOf(tokenizer, AGENT_CALL, [imEnd]);
  const answer = script ?? agent;
  const calls: ScriptedCall[] = [];
  const model: ServedModel = {
    id: 'scripted-qwen3',
    baseModel: 'tiny-qwen3',
    baseUrl: 'http://scripted.invalid',
    renderer: getRenderer(opts.renderer ?? 'qwen3', tokenizer),
    tokenizer,
    maxContextLength: opts.maxContextLength,
    async sample(prompt, _n, params) {
      calls.push({ prompt, params });
      return { sequences: [answer(promptText(tokenizer, prompt))] };
    },
    close: async () => undefined,
  };
  return { model, calls };
}
