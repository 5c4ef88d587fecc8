// TrainOnWhat weighting, the generation-prompt post-pass, registry and recommended renderers.
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigurationError, RendererError } from '../../src/cookbook/errors.js';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import {
  classifyParseFailure,
  getRecommendedRendererName,
  getRenderer,
  getTextContent,
  parseContentBlocks,
  registerRenderer,
  rendererNotRecommendedWarning,
  RoleColonRenderer,
} from '../../src/cookbook/renderers/index.js';
import { TrainOnWhat, type Message, type Renderer } from '../../src/cookbook/renderers/types.js';
import { getTokenizer, type Tokenizer } from '../../src/cookbook/tokenizer.js';

let tok: Tokenizer;
let llama3: Renderer;
beforeAll(async () => {
  tok = await getTokenizer('tiny-llama3');
  llama3 = getRenderer('llama3', tok);
});

const conv: Message[] = [
  { role: 'system', content: 'S' },
  { role: 'user', content: 'U1' },
  { role: 'assistant', content: 'A1' },
  { role: 'user', content: 'U2' },
  { role: 'assistant', content: 'A2' },
];

function trainedText(r: Renderer, messages: Message[], mode: TrainOnWhat): string {
  const { modelInput, weights } = r.buildSupervisedExample(messages, mode);
  const ids = modelInputToInts(modelInput);
  expect(weights).toHaveLength(ids.length);
  return tok.decode(ids.filter((_, i) => weights[i] === 1));
}

describe('TrainOnWhat (spec §6.1 table)', () => {
  it('string values are exactly the reference ones', () => {
    expect(Object.values(TrainOnWhat)).toEqual([
      'last_assistant_message',
      'last_assistant_turn',
      'all_assistant_messages',
      'all_messages',
      'all_tokens',
      'all_user_and_system_messages',
      'customized',
    ]);
  });

  it('weights each mode as the reference does', () => {
    expect(trainedText(llama3, conv, TrainOnWhat.LAST_ASSISTANT_MESSAGE)).toBe('A2<|eot_id|>');
    expect(trainedText(llama3, conv, TrainOnWhat.LAST_ASSISTANT_TURN)).toBe('A2<|eot_id|>');
    expect(trainedText(llama3, conv, TrainOnWhat.ALL_ASSISTANT_MESSAGES)).toBe('A1<|eot_id|>A2<|eot_id|>');
    expect(trainedText(llama3, conv, TrainOnWhat.ALL_MESSAGES)).toBe('S<|eot_id|>U1<|eot_id|>A1<|eot_id|>U2<|eot_id|>A2<|eot_id|>');
    expect(trainedText(llama3, conv, TrainOnWhat.ALL_USER_AND_SYSTEM_MESSAGES)).toBe('S<|eot_id|>U1<|eot_id|>U2<|eot_id|>');
    const all = llama3.buildSupervisedExample(conv, TrainOnWhat.ALL_TOKENS);
    // Everything but the BOS is trained.
    expect(all.weights[0]).toBe(0);
    expect(all.weights.slice(1).every((w) => w === 1)).toBe(true);
  });

  it('LAST_ASSISTANT_TURN covers every assistant message after the last user message', () => {
    const turn: Message[] = [
      { role: 'user', content: 'U' },
      { role: 'assistant', content: 'A1' },
      { role: 'tool', content: 'T' },
      { role: 'assistant', content: 'A2' },
    ];
    expect(trainedText(llama3, turn, TrainOnWhat.LAST_ASSISTANT_TURN)).toBe('A1<|eot_id|>A2<|eot_id|>');
    expect(trainedText(llama3, turn, TrainOnWhat.LAST_ASSISTANT_MESSAGE)).toBe('A2<|eot_id|>');
  });

  it('CUSTOMIZED needs trainable on every message; other modes forbid it', () => {
    const custom = conv.map((m, i) => ({ ...m, trainable: i === 1 || i === 4 }));
    expect(trainedText(llama3, custom, TrainOnWhat.CUSTOMIZED)).toBe('U1<|eot_id|>A2<|eot_id|>');
    expect(() => llama3.buildSupervisedExample(conv, TrainOnWhat.CUSTOMIZED)).toThrow(RendererError);
    expect(() => llama3.buildSupervisedExample(custom, TrainOnWhat.ALL_MESSAGES)).toThrow(/trainable/);
  });

  it('observation before the first trained token equals the generation prompt', () => {
    for (const mode of [TrainOnWhat.LAST_ASSISTANT_MESSAGE, TrainOnWhat.LAST_ASSISTANT_TURN]) {
      const { modelInput, weights } = llama3.buildSupervisedExample(conv, mode);
      const ids = modelInputToInts(modelInput);
      expect(ids.slice(0, weights.indexOf(1))).toEqual(modelInputToInts(llama3.buildGenerationPrompt(conv.slice(0, 4))));
    }
  });

  it('buildSupervisedExamples: one example on an extending renderer', () => {
    expect(llama3.buildSupervisedExamples(conv, TrainOnWhat.ALL_ASSISTANT_MESSAGES)).toHaveLength(1);
  });
});

describe('registry and recommended renderers (spec §6.2, §6.6)', () => {
  it('builds the named renderers and rejects unknown names', () => {
    for (const name of ['role_colon', 'llama3', 'qwen3', 'qwen3_disable_thinking', 'qwen3_instruct']) {
      expect(getRenderer(name, tok).name).toBe(name);
    }
    expect(getRenderer('qwen3_disable_thinking', tok).disablesThinking).toBe(true);
    expect(() => getRenderer('nope', tok)).toThrow(/Unknown renderer: nope/);
  });

  it('checks custom registrations first', () => {
    registerRenderer('my_colon', (t) => new RoleColonRenderer('my_colon', t));
    expect(getRenderer('my_colon', tok)).toBeInstanceOf(RoleColonRenderer);
  });

  it('recommends per model', () => {
    expect(getRecommendedRendererName('tiny-qwen3')).toBe('qwen3');
    expect(getRecommendedRendererName('tiny-llama3')).toBe('llama3');
    expect(getRecommendedRendererName('Qwen/Qwen3-8B')).toBe('qwen3');
    expect(getRecommendedRendererName('Qwen/Qwen3-8B-Base')).toBe('role_colon');
    expect(getRecommendedRendererName('Qwen/Qwen3-4B-Instruct-2507')).toBe('qwen3_instruct');
    expect(getRecommendedRendererName('meta-llama/Llama-3.1-8B-Instruct')).toBe('llama3');
    expect(getRecommendedRendererName('meta-llama/Llama-3.2-1B')).toBe('role_colon');
    expect(getRecommendedRendererName('meta-llama/Llama-3.1-8B:peft')).toBe('role_colon');
    expect(() => getRecommendedRendererName('Llama-3.2-1B')).toThrow(ConfigurationError);
    expect(() => getRecommendedRendererName('acme/Model')).toThrow(/not served/);
    expect(getRecommendedRendererName('openai/gpt-oss-20b')).toBe('gpt_oss_no_sysprompt');
    expect(getRecommendedRendererName('deepseek-ai/DeepSeek-V3.1')).toBe('deepseekv3');
    expect(() => getRecommendedRendererName('Qwen/Nope')).toThrow(/Unknown model/);
  });

  it('warns only for a set, known, non-recommended renderer', () => {
    expect(rendererNotRecommendedWarning('Qwen/Qwen3-8B', 'qwen3_disable_thinking')).toBeUndefined();
    expect(rendererNotRecommendedWarning('Qwen/Qwen3-8B', undefined)).toBeUndefined();
    expect(rendererNotRecommendedWarning('acme/x', 'llama3')).toBeUndefined();
    expect(rendererNotRecommendedWarning('Qwen/Qwen3-8B', 'llama3')).toMatch(/not recommended/);
  });
});

describe('content helpers', () => {
  it('parseContentBlocks keeps whitespace and skips empty thinking', () => {
    expect(parseContentBlocks('plain')).toBeUndefined();
    const r = parseContentBlocks(' a <think></think>b<tool_call>{"name": "f", "arguments": {}}</tool_call> c');
    expect(r?.parts).toEqual([
      { type: 'text', text: ' a ' },
      { type: 'text', text: 'b' },
      { type: 'text', text: ' c' },
    ]);
    expect(r?.toolCalls).toEqual([{ type: 'function', id: null, function: { name: 'f', arguments: '{}' } }]);
  });

  it('getTextContent excludes thinking; classifyParseFailure', () => {
    const m: Message = { role: 'assistant', content: [{ type: 'thinking', thinking: 't' }, { type: 'text', text: 'x' }] };
    expect(getTextContent(m)).toBe('x');
    expect(classifyParseFailure(m, 'malformed')?.kind).toBe('structural');
    expect(classifyParseFailure({ ...m, unparsed_tool_calls: [{ raw_text: 'r', error: 'e1' }] }, 'stop_sequence')).toEqual({
      kind: 'content',
      detail: 'e1',
    });
    expect(classifyParseFailure(m, 'eos')).toBeUndefined();
  });
});
