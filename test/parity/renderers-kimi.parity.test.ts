// Renderer parity with the Python reference for the Kimi K2 / K2.5 / K2.6 renderers. Kimi's own
// (tiktoken) tokenizer cannot be had offline, so both sides use Qwen3's tokenizer plus every
// special token the Kimi renderers write or parse, with Kimi's `[EOS]` as the eos token.
import { describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import {
  KimiK25DisableThinkingRenderer,
  KimiK25Renderer,
  KimiK26PreserveThinkingRenderer,
} from '../../src/cookbook/renderers/kimi-k25.js';
import { KimiK2Renderer } from '../../src/cookbook/renderers/kimi-k2.js';
import { encodeToolsToTypescriptStyle } from '../../src/cookbook/renderers/kimi-tool-declaration.js';
import type { Message, SupervisedExample, ToolSpec, TrainOnWhat } from '../../src/cookbook/renderers/types.js';
import { getTokenizer, type Tokenizer } from '../../src/cookbook/tokenizer.js';
import { outcome, referenceCases, sameOutcome, type Outcome } from './reference.js';
import { describeRendererParity } from './renderer-parity.js';
import { standInTokenizer } from './tokenizers.js';


const kimi = standInTokenizer('kimi');

await describeRendererParity([
  { renderer: 'kimi_k2', tokenizer: kimi, make: (t) => new KimiK2Renderer('kimi_k2', t) },
  { renderer: 'kimi_k25', tokenizer: kimi, make: (t) => new KimiK25Renderer('kimi_k25', t) },
  {
    renderer: 'kimi_k25_disable_thinking',
    tokenizer: kimi,
    make: (t) => new KimiK25DisableThinkingRenderer('kimi_k25_disable_thinking', t),
  },
  { renderer: 'kimi_k26', tokenizer: kimi, make: (t) => new KimiK25Renderer('kimi_k26', t) },
  {
    renderer: 'kimi_k26_disable_thinking',
    tokenizer: kimi,
    make: (t) => new KimiK25DisableThinkingRenderer('kimi_k26_disable_thinking', t),
  },
  {
    renderer: 'kimi_k26_preserve_thinking',
    tokenizer: kimi,
    make: (t) => new KimiK26PreserveThinkingRenderer('kimi_k26_preserve_thinking', t),
  },
]);

// ----------------------------------------------------------------------------------------------
// Kimi-only behaviour the shared cases do not reach (kimi_reference_cases.py computes the
// reference side): tool declarations, Kimi's tool-call sections, tool results, multipart text,
// default-system insertion, and splitting into one example per user turn.

type KimiCase = { id: string; kind: string; renderer?: string; [k: string]: unknown };

const weatherTool = {
  name: 'get_weather',
  description: 'Get the weather.\n\nReturns °C.',
  parameters: {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'City name', minLength: 1, maxLength: 64 },
      unit: { type: 'string', enum: ['c', 'f'], default: 'c' },
    },
    required: ['city'],
  },
};
const complexTool = {
  name: 'book',
  description: 'Book things',
  parameters: {
    type: 'object',
    $defs: {
      Address: {
        type: 'object',
        description: 'A postal address',
        properties: { street: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
        required: ['street'],
      },
      Color: { enum: ['red', 'green'], type: 'string' },
    },
    properties: {
      where: { $ref: '#/$defs/Address', description: 'Delivery address' },
      color: { $ref: '#/$defs/Color' },
      count: { type: 'integer', minimum: 1, maximum: 10, default: 2 },
      ratio: { type: 'number', default: 0.5 },
      flag: { type: 'boolean', default: true },
      tags: { type: 'array', items: { type: 'string', description: 'A tag\nlower case' }, minItems: 1 },
      matrix: { type: 'array', items: { type: 'array', items: { type: 'number' } } },
      anything: { type: 'array' },
      maybe: { anyOf: [{ type: 'string' }, { type: 'null' }], description: 'Optional text' },
      either: { type: ['string', 'integer', 'null'] },
      level: { enum: [1, 2.5, null, true], type: ['number', 'null'] },
      meta: { type: 'object', additionalProperties: { type: 'integer' } },
      closed: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false },
      open: { type: 'object', additionalProperties: true },
      empty: {},
      yes: true,
      opts: {
        type: 'object',
        properties: { z: { type: 'string' }, b: { type: 'string' } },
        required: ['z'],
        default: { z: 'é' },
      },
      note: { type: 'string', default: 'naïve "q"' },
    },
    required: ['where', 'count', 'tags'],
  },
};
const treeTool = {
  name: 'walk',
  description: 'Walk a tree',
  parameters: {
    type: 'object',
    properties: {
      value: { type: 'number', description: 'Node value' },
      children: { type: 'array', items: { $ref: '#' } },
    },
    required: ['value'],
  },
};
const noDescriptionTool = { name: 'ping', parameters: {} };
const fn = (f: unknown) => ({ type: 'function', function: f });

const toolCases: KimiCase[] = [
  { id: 'tools_ts/weather', kind: 'tools_ts', tools: [fn(weatherTool)] },
  { id: 'tools_ts/complex', kind: 'tools_ts', tools: [fn(complexTool)] },
  { id: 'tools_ts/self_ref', kind: 'tools_ts', tools: [fn(treeTool)] },
  {
    id: 'tools_ts/several',
    kind: 'tools_ts',
    tools: [fn(weatherTool), { type: '_plugin' }, fn(noDescriptionTool), fn(treeTool)],
  },
  { id: 'tools_ts/none', kind: 'tools_ts', tools: [] },
  { id: 'tools_ts/plugins_only', kind: 'tools_ts', tools: [{ type: '_plugin', function: weatherTool }] },
  {
    id: 'tools_ts/bad_enum',
    kind: 'tools_ts',
    tools: [fn({ name: 'f', parameters: { type: 'object', properties: { e: { type: 'integer', enum: [1, 'x'] } } } })],
  },
  {
    id: 'tools_ts/missing_ref',
    kind: 'tools_ts',
    tools: [fn({ name: 'f', parameters: { type: 'object', properties: { e: { $ref: '#/$defs/Nope' } } } })],
  },
  {
    id: 'tools_ts/bad_union',
    kind: 'tools_ts',
    tools: [fn({ name: 'f', parameters: { type: 'object', properties: { e: { type: ['string', 'date'] } } } })],
  },
  {
    id: 'tools_ts/bad_additional',
    kind: 'tools_ts',
    tools: [fn({ name: 'f', parameters: { type: 'object', properties: {}, additionalProperties: 'yes' } })],
  },
];

const KIMI_NAMES = ['kimi_k2', 'kimi_k25', 'kimi_k25_disable_thinking', 'kimi_k26_preserve_thinking'];

const toolCall = (id: string | null, name: string, args: string) => ({
  type: 'function',
  id,
  function: { name, arguments: args },
});
const thought = (thinking: string, text: string) => [
  { type: 'thinking', thinking },
  { type: 'text', text },
];
const conversations: Record<string, unknown[]> = {
  agentic: [
    { role: 'tool_declare', content: '# Tools\n...' },
    { role: 'user', content: 'Weather in Paris and Rome?' },
    {
      role: 'assistant',
      content: thought('Two lookups.', 'Checking.'),
      tool_calls: [
        toolCall(null, 'get_weather', '{"city": "Paris"}'),
        toolCall('functions.get_weather:7', 'get_weather', '{"city":"Rome"}'),
      ],
    },
    { role: 'tool', content: '18', tool_call_id: 'functions.get_weather:0', name: 'get_weather' },
    { role: 'tool', content: '21' },
    { role: 'assistant', content: thought('Rome is warmer.', 'Paris 18, Rome 21.') },
  ],
  history_thinking: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'A?' },
    { role: 'assistant', content: thought('think a', 'a') },
    { role: 'user', content: 'B?' },
    { role: 'assistant', content: thought('think b', 'b') },
    { role: 'user', content: 'C?' },
    { role: 'assistant', content: 'c' },
  ],
  multipart_user: [
    { role: 'user', content: [{ type: 'text', text: 'Part one. ' }, { type: 'text', text: 'Part two.' }] },
    { role: 'assistant', content: 'OK' },
  ],
  other_roles: [
    { role: 'developer', content: 'Dev note' },
    { role: 'user', content: [{ type: 'text', text: 'single part' }] },
    { role: 'assistant', content: 'Done' },
  ],
  declare_then_system: [
    { role: 'tool_declare', content: 'tools' },
    { role: 'system', content: 'Custom system' },
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello' },
  ],
};

const TRAIN_ON = [
  'last_assistant_message',
  'last_assistant_turn',
  'all_assistant_messages',
  'all_tokens',
  'all_user_and_system_messages',
];

const renderCases: KimiCase[] = KIMI_NAMES.flatMap((renderer) => [
  { id: `${renderer}/prefix/two`, kind: 'prefix', renderer, tools: [weatherTool, complexTool], system_prompt: 'Sys' },
  { id: `${renderer}/prefix/default_system`, kind: 'prefix', renderer, tools: [treeTool] },
  { id: `${renderer}/prefix/no_tools`, kind: 'prefix', renderer, tools: [] },
  { id: `${renderer}/generation_prompt/empty`, kind: 'generation_prompt', renderer, messages: [] },
  ...Object.entries(conversations).flatMap(([name, messages]): KimiCase[] => [
    {
      id: `${renderer}/generation_prompt/${name}`,
      kind: 'generation_prompt',
      renderer,
      messages: messages.slice(0, -1),
      prefill: 'Go',
    },
    ...TRAIN_ON.flatMap((tow): KimiCase[] =>
      ['supervised', 'supervised_examples'].map((kind) => ({
        id: `${renderer}/${kind}/${name}/${tow}`,
        kind,
        renderer,
        messages,
        train_on_what: tow,
      })),
    ),
  ]),
  {
    id: `${renderer}/openai/assistant`,
    kind: 'openai',
    renderer,
    message: (conversations.agentic as unknown[])[2],
  },
  { id: `${renderer}/openai/tool`, kind: 'openai', renderer, message: (conversations.agentic as unknown[])[3] },
]);

const SECTION = (calls: string) => `<|tool_calls_section_begin|>${calls}<|tool_calls_section_end|>`;
const CALL = (id: string, args: string) =>
  `<|tool_call_begin|>${id}<|tool_call_argument_begin|>${args}<|tool_call_end|>`;
const completions: Record<string, string> = {
  tool_calls:
    '<think>look up</think>Sure.' +
    SECTION(CALL('functions.get_weather:0', '{"city": "Paris"}') + CALL(' functions.search:1 ', ' {bad} ')) +
    '<|im_end|>',
  old_spelling: `Ok<|tool_call_section_begin|>${CALL('get_time:3', '{}')}<|tool_call_section_end|><|im_end|>`,
  trailing_text: `${SECTION(CALL('functions.a.b:0', '[1, 2]'))} after<|im_end|>`,
  non_finite: `${SECTION(CALL('functions.f:0', '{"x": NaN, "y": -Infinity, "s": "NaN"}'))}<|im_end|>`,
  no_call_id: `${SECTION('<|tool_call_begin|>get_weather<|tool_call_argument_begin|>{}<|tool_call_end|>')}<|im_end|>`,
  dangling_section: `Let me check.<|tool_calls_section_begin|>${CALL('functions.f:0', '{}')}<|im_end|>`,
  dangling_call: `${SECTION('<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{')}<|im_end|>`,
  unprefilled_thinking: 'reasoning here</think>The answer.<|im_end|>',
  empty_thinking: '<think></think>Plain.<|im_end|>',
  truncated_tool: `<think>x</think>${SECTION(CALL('functions.f:0', '{}'))}`,
  two_stops: 'a<|im_end|>b<|im_end|>',
};
const parseCases: KimiCase[] = KIMI_NAMES.flatMap((renderer) =>
  Object.entries(completions).map(([name, text]) => ({
    id: `${renderer}/parse/${name}`,
    kind: 'parse',
    renderer,
    text,
  })),
);

type KimiResult = { id: string; tokens: number[] | null; expected: Outcome };

async function kimiReference(cases: KimiCase[]): Promise<KimiResult[]> {
  const [results] = await referenceCases([{ topic: 'kimi', args: { tokenizer_dir: kimi.dir, cases } }]);
  return results as unknown as KimiResult[];
}

const MAKE: Record<string, (t: Tokenizer) => KimiK2Renderer> = {
  kimi_k2: (t) => new KimiK2Renderer('kimi_k2', t),
  kimi_k25: (t) => new KimiK25Renderer('kimi_k25', t),
  kimi_k25_disable_thinking: (t) => new KimiK25DisableThinkingRenderer('kimi_k25_disable_thinking', t),
  kimi_k26_preserve_thinking: (t) => new KimiK26PreserveThinkingRenderer('kimi_k26_preserve_thinking', t),
};

function runKimiCase(tokenizer: Tokenizer, c: KimiCase, tokens: number[] | null): Outcome {
  return outcome((): unknown => {
    if (c.kind === 'tools_ts') return encodeToolsToTypescriptStyle(c.tools as unknown[]);
    const renderer = MAKE[c.renderer!](tokenizer);
    const messages = c.messages as Message[];
    const tow = c.train_on_what as TrainOnWhat;
    const example = (ex: SupervisedExample) => ({ tokens: modelInputToInts(ex.modelInput), weights: ex.weights });
    switch (c.kind) {
      case 'prefix':
        return renderer.createConversationPrefixWithTools(c.tools as ToolSpec[], c.system_prompt as string | undefined);
      case 'supervised':
        return example(renderer.buildSupervisedExample(messages, tow));
      case 'supervised_examples':
        return renderer.buildSupervisedExamples(messages, tow).map(example);
      case 'generation_prompt':
        return modelInputToInts(renderer.buildGenerationPrompt(messages, 'assistant', c.prefill as string | undefined));
      case 'parse': {
        const { message, termination } = renderer.parseResponse(tokens!);
        return { message: JSON.parse(JSON.stringify(message)), termination };
      }
      case 'openai':
        return renderer.toOpenAIMessage(c.message as Message);
      default:
        throw new Error(`unknown kind ${c.kind}`);
    }
  });
}

// JSON.parse's wording differs from Python's json module: compare only the category.
const hideParserWording = (x: unknown): unknown =>
  JSON.parse(JSON.stringify(x), (key, value) =>
    key === 'error' && typeof value === 'string' && value.startsWith('Invalid JSON: ') ? 'Invalid JSON: …' : value,
  );

const kimiCases = [...toolCases, ...renderCases, ...parseCases];
const kimiResults = await kimiReference(kimiCases);

describe('kimi-only behaviour × qwen3+kimi-specials', () => {
  it.each(kimiCases.map((c, i) => [c.id, c, kimiResults[i]] as const))('%s', async (_id, c, ref) => {
    const tokenizer = await getTokenizer('parity:kimi-extra', kimi.dir);
    const ts = runKimiCase(tokenizer, c, ref.tokens);
    const { ts: got, ref: want } = sameOutcome(
      hideParserWording(ts) as Outcome,
      hideParserWording(ref.expected) as Outcome,
    );
    expect(got, `${c.id}\nreference: ${JSON.stringify(ref.expected)}\nours: ${JSON.stringify(ts)}`).toEqual(want);
  });
});
