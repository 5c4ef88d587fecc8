// Renderer parity with the Python reference for the gpt-oss (Harmony) renderers, on the shipped
// gpt-oss tokenizer.
//
// 1. The shared harness, one block per registry name. The `*_reasoning` variants write today's
//    date into their system prompt on both sides (the reference reads its local clock at render
//    time, as the TS default does), so a run straddling local midnight could see two dates.
// 2. Harmony-specific cases the shared conversations do not reach -- channel parsing, tool calls
//    with preambles and reasoning, tool results, the tool-definition prefix, a pinned date -- each
//    computed by the reference's GptOssRenderer below and compared the same way.
import { describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { GPT_OSS_RENDERERS, GptOssRenderer, type GptOssOptions } from '../../src/cookbook/renderers/gpt-oss.js';
import type { Message, ToolSpec, TrainOnWhat } from '../../src/cookbook/renderers/types.js';
import { getTokenizer, shippedTokenizerDir } from '../../src/cookbook/tokenizer.js';
import { outcome, referenceCases, sameOutcome, type Outcome } from './reference.js';
import { describeRendererParity } from './renderer-parity.js';

await describeRendererParity(
  Object.entries(GPT_OSS_RENDERERS).map(([name, factory]) => ({
    renderer: name,
    tokenizer: 'gpt_oss' as const,
    make: (t) => factory(name, t),
  })),
);

// ---------------------------------------------------------------------------- Harmony cases

interface RendererSpec {
  use_system_prompt?: boolean;
  reasoning_effort?: string;
  current_date?: string;
}
type HarmonyCase =
  | { id: string; kind: 'parse'; text: string }
  | { id: string; kind: 'supervised'; r?: RendererSpec; messages: Message[]; train_on_what: TrainOnWhat }
  | { id: string; kind: 'generation_prompt'; r?: RendererSpec; messages: Message[] }
  | { id: string; kind: 'tools_prefix'; r?: RendererSpec; tools: ToolSpec[]; system_prompt: string; messages: Message[] };

const PINNED: RendererSpec = { use_system_prompt: true, reasoning_effort: 'high', current_date: '2025-03-04' };
const call = (name: string, args: string, id = 'c') => ({ type: 'function' as const, id, function: { name, arguments: args } });

const AGENT_TURN: Message[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'developer', content: 'Prefer metric units.' },
  { role: 'user', content: 'Weather in Paris and Oslo?' },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'Two cities, ' },
      { type: 'thinking', thinking: 'two calls.' },
      { type: 'text', text: 'Checking both.' },
    ],
    tool_calls: [call('get_weather', '{"city": "Paris"}'), call('functions_lookup', '{"city":"Oslo"}')],
  },
  { role: 'tool', content: '18', name: 'get_weather', tool_call_id: 'c' },
  { role: 'tool', content: '5', name: 'functions.functions_lookup' },
  { role: 'tool', content: 'no name', tool_call_id: 'c' },
  { role: 'assistant', content: [{ type: 'thinking', thinking: 'Done.' }, { type: 'text', text: 'Paris 18 °C, Oslo 5 °C.' }] },
];

const TOOLS: ToolSpec[] = [
  {
    name: 'get_weather',
    description: 'Current weather',
    parameters: {
      type: 'object',
      description: 'Where to look',
      properties: {
        city: { type: 'string', title: 'City', description: 'City name', examples: ['Paris', 'Zürich'] },
        unit: { type: 'string', enum: ['°C', 'F'], default: '°C' },
        days: { type: ['integer', 'null'], default: 1 },
        hours: { type: 'array', items: { type: 'number' }, nullable: true },
        opts: {
          type: 'object',
          properties: { precise: { type: 'boolean' }, tags: { type: 'array' } },
          required: ['precise'],
        },
        where: { anyOf: [{ type: 'string' }, { type: 'object', properties: { lat: { type: 'number' } } }] },
        kind: { oneOf: [{ type: 'string', enum: ['a'] }, { type: 'integer' }] },
        raw: {},
      },
      required: ['city'],
    },
  },
  { name: 'ping', description: '', parameters: { type: 'object', properties: {} } },
  // Without description and parameters: the reference reads both with .get.
  { name: 'now' } as ToolSpec,
];

const CASES: HarmonyCase[] = [
  // Parsing: completions as the model emits them after `<|start|>assistant`.
  { id: 'parse/analysis_final', kind: 'parse', text: '<|channel|>analysis<|message|>add them<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>' },
  {
    id: 'parse/reasoning_then_call',
    kind: 'parse',
    text: '<|channel|>analysis<|message|>need weather<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>  {"city": "Paris"}\n<|call|>',
  },
  {
    id: 'parse/preamble_then_call',
    kind: 'parse',
    text: '<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>{}<|call|>',
  },
  { id: 'parse/bad_json_call', kind: 'parse', text: ' to=functions.f<|channel|>commentary <|constrain|>json<|message|>{not json}<|call|>' },
  { id: 'parse/nan_json_call', kind: 'parse', text: ' to=functions.f<|channel|>commentary json<|message|>{"x": NaN, "y": -Infinity}<|call|>' },
  { id: 'parse/nan_glued_call', kind: 'parse', text: ' to=functions.f<|channel|>commentary json<|message|>[1NaN]<|call|>' },
  { id: 'parse/blank_call_body', kind: 'parse', text: ' to=functions.f<|channel|>commentary<|message|> \u3000\n<|call|>' },
  { id: 'parse/header_without_message', kind: 'parse', text: '<|channel|>final<|message|>ok<|end|><|start|>assistant to=functions.f<|channel|>commentary<|return|>' },
  { id: 'parse/unknown_channel_and_no_channel', kind: 'parse', text: '<|channel|>draft<|message|>x<|end|><|start|>assistant<|message|>y<|end|><|start|>assistant<|channel|>final<|message|>z<|return|>' },
  { id: 'parse/call_before_return', kind: 'parse', text: '<|channel|>final<|message|>a<|call|>b<|return|>' },
  { id: 'parse/return_before_call', kind: 'parse', text: '<|channel|>final<|message|>a<|return|>b<|call|>' },
  { id: 'parse/two_calls', kind: 'parse', text: ' to=functions.f<|channel|>commentary<|message|>{}<|call|><|start|>assistant to=functions.g<|channel|>commentary<|message|>{}<|call|>' },
  { id: 'parse/two_returns', kind: 'parse', text: 'a<|return|>b<|return|>' },
  { id: 'parse/no_message_marker', kind: 'parse', text: 'just text<|return|>' },
  // Rendering.
  ...(['last_assistant_message', 'last_assistant_turn', 'all_messages', 'all_tokens', 'all_user_and_system_messages'] as const).map(
    (tow): HarmonyCase => ({ id: `supervised/agent_turn/${tow}`, kind: 'supervised', messages: AGENT_TURN, train_on_what: tow }),
  ),
  { id: 'supervised/agent_turn_pinned_date', kind: 'supervised', r: PINNED, messages: AGENT_TURN, train_on_what: 'all_tokens' },
  { id: 'generation_prompt/agent_turn', kind: 'generation_prompt', messages: AGENT_TURN.slice(0, -1) },
  { id: 'generation_prompt/agent_turn_pinned_date', kind: 'generation_prompt', r: PINNED, messages: AGENT_TURN.slice(0, -1) },
  {
    id: 'supervised/customized',
    kind: 'supervised',
    messages: [
      { role: 'user', content: 'hi', trainable: true },
      { role: 'assistant', content: 'hello', trainable: false },
    ],
    train_on_what: 'customized',
  },
  {
    id: 'supervised/customized_with_system_prompt',
    kind: 'supervised',
    r: PINNED,
    messages: [
      { role: 'user', content: 'hi', trainable: true },
      { role: 'assistant', content: 'hello', trainable: true },
    ],
    train_on_what: 'customized',
  },
  {
    id: 'supervised/multipart_user_refused',
    kind: 'supervised',
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
      { role: 'assistant', content: 'ok' },
    ],
    train_on_what: 'last_assistant_message',
  },
  {
    id: 'supervised/special_tokens_in_text',
    kind: 'supervised',
    messages: [
      { role: 'user', content: 'say <|end|> please' },
      { role: 'assistant', content: 'ok<|return|>' },
    ],
    train_on_what: 'all_tokens',
  },
  { id: 'tools_prefix/tools_and_instructions', kind: 'tools_prefix', tools: TOOLS, system_prompt: 'Use tools.', messages: AGENT_TURN.slice(2, 3) },
  { id: 'tools_prefix/tools_only', kind: 'tools_prefix', tools: TOOLS.slice(1), system_prompt: '', messages: AGENT_TURN.slice(2, 3) },
  { id: 'tools_prefix/instructions_only', kind: 'tools_prefix', tools: [], system_prompt: 'Be kind.', messages: AGENT_TURN.slice(2, 3) },
  { id: 'tools_prefix/nothing', kind: 'tools_prefix', tools: [], system_prompt: '', messages: AGENT_TURN.slice(2, 3) },
];

// The reference side: its own GptOssRenderer on the same tokenizer folder, reusing the harness's
// helpers for JSON conversion, exceptions as outcomes and ToolCall objects.

const tokenizerDir = shippedTokenizerDir('gpt_oss');

async function referenceHarmonyCases(): Promise<Array<{ tokens: number[] | null; expected: Outcome }>> {
  const [results] = await referenceCases([{ topic: 'gpt_oss_harmony', args: { tokenizer_dir: tokenizerDir, cases: CASES } }]);
  return results as unknown as Array<{ tokens: number[] | null; expected: Outcome }>;
}

const reference = await referenceHarmonyCases();

function makeRenderer(spec: RendererSpec = {}, tokenizer: Awaited<ReturnType<typeof getTokenizer>>): GptOssRenderer {
  const opts: GptOssOptions = {
    useSystemPrompt: spec.use_system_prompt,
    reasoningEffort: spec.reasoning_effort,
    currentDate: spec.current_date,
  };
  return new GptOssRenderer('gpt_oss_test', tokenizer, opts);
}

describe('gpt-oss Harmony cases', () => {
  it.each(CASES.map((c, i) => [c.id, c, reference[i]] as const))('%s', async (_id, c, ref) => {
    const tokenizer = await getTokenizer('parity:gpt_oss', tokenizerDir);
    const renderer = makeRenderer('r' in c ? c.r : undefined, tokenizer);
    const ts = outcome((): unknown => {
      switch (c.kind) {
        case 'parse': {
          const { message, termination } = renderer.parseResponse(ref.tokens!);
          return { message: JSON.parse(JSON.stringify(message)), termination };
        }
        case 'supervised': {
          const ex = renderer.buildSupervisedExample(c.messages, c.train_on_what);
          return { tokens: modelInputToInts(ex.modelInput), weights: ex.weights };
        }
        case 'generation_prompt':
          return modelInputToInts(renderer.buildGenerationPrompt(c.messages));
        case 'tools_prefix': {
          const prefix = renderer.createConversationPrefixWithTools(c.tools, c.system_prompt);
          return { prefix, prompt: modelInputToInts(renderer.buildGenerationPrompt([...prefix, ...c.messages])) };
        }
      }
    });
    // JSON.parse error wording differs from Python's json: compare up to the category.
    const hide = (o: Outcome) =>
      JSON.parse(JSON.stringify(o), (k, v) => (k === 'error' && typeof v === 'string' && v.startsWith('Invalid JSON: ') ? 'Invalid JSON: …' : v));
    const { ts: got, ref: want } = sameOutcome(hide(ts), hide(ref.expected));
    expect(got, `${c.id}\nreference: ${JSON.stringify(ref.expected)}\nours: ${JSON.stringify(ts)}`).toEqual(want);
  });
});
