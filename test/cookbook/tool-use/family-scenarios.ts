// The agent env's tool-call scenarios for every renderer family with a tool-call format whose
// tokenizer does not ship here (Kimi K2 and K2.5, DeepSeek V3 and V4.1, GLM 5.3, Nemotron 3): the
// policy's tokens for each turn, written as a model of the family writes them (the renderer's own
// rendering of the assistant turn, the trained tokens of a supervised example), and broken on purpose
// where a scenario needs a malformed call. families.test.ts checks what the env does with them;
// test/parity/agent-env-families.parity.test.ts steps the reference's env with the same tokens.
//
// Tokenizers: the stand-ins the renderer parity tests use (test/parity/renderers-*.parity.test.ts):
// a shipped tokenizer plus the family's special tokens as added tokens, loaded alike by both sides.
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Message, Renderer, ToolCall, ToolSpec } from '../../../src/cookbook/renderers/types.js';
import { getTokenizer, shippedTokenizerDir, type Tokenizer } from '../../../src/cookbook/tokenizer.js';
import { augmentedTokenizerDir } from '../../parity/tokenizers.js';

const nonSpecial = (tokens: string[]) => tokens.map((content) => ({ content, special: false }));

const kimiTokenizer = () =>
  augmentedTokenizerDir({
    base: 'qwen3',
    tokens: [
      '[BOS]', '[EOS]', '<|im_end|>', '<|im_user|>', '<|im_assistant|>', '<|im_system|>', '<|im_middle|>',
      '<|tool_calls_section_begin|>', '<|tool_calls_section_end|>', '<|tool_call_section_begin|>', '<|tool_call_section_end|>',
      '<|tool_call_begin|>', '<|tool_call_argument_begin|>', '<|tool_call_end|>', '<|media_begin|>', '<|media_content|>', '<|media_end|>',
      '<think>', '</think>',
    ],
    config: { eos_token: '[EOS]', bos_token: '[BOS]' },
  });
const deepseekV4_1Tokenizer = () => augmentedTokenizerDir({ base: 'deepseek_v3', tokens: nonSpecial(['<｜System｜>', '<think>', '</think>', '｜DSML｜']) });
const glmTokenizer = () =>
  augmentedTokenizerDir({
    base: 'qwen3',
    tokens: [
      '[gMASK]', '<sop>', '<|system|>', '<|user|>', '<|assistant|>', '<|observation|>', '<|endoftext|>',
      ...nonSpecial(['<think>', '</think>', '<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>', '<arg_key>', '</arg_key>', '<arg_value>', '</arg_value>']),
    ],
    config: { eos_token: '<|endoftext|>' },
  });
const nemotronTokenizer = () =>
  augmentedTokenizerDir({
    base: 'qwen3',
    tokens: ['<|im_start|>', '<|im_end|>', ...nonSpecial(['<think>', '</think>', '<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>']), '<img>', '</img>'],
    config: { eos_token: '<|im_end|>' },
  });

export interface Family {
  /** The family as people name it. */
  family: string;
  renderer: string;
  tokenizerDir: () => string;
  /** The id a model of the family gives its i-th call (Kimi's `functions.<name>:<i>`; the others write none). */
  callId?: (name: string, i: number) => string;
  /** Breaks the call whose `word` argument is `word` inside the rendered turn, so the renderer cannot parse it. */
  breakCall: (text: string, word: string) => string;
  /** The renderer's error for that broken call (a prefix: JSON decoders word their errors their own way). */
  brokenError: string;
  /** The marker that closes the family's tool block; taking it out leaves the block unterminated. */
  blockClose: string;
  /** Whether the renderer reports a tool block left open (default true). */
  detectsUnterminated?: boolean;
  /** How the next observation shows the tool's answer `cat: a small feline (2)`. */
  toolResponse: string;
}

const replaceOnce = (text: string, from: string, to: string): string => {
  const at = text.indexOf(from);
  if (at === -1) throw new Error(`scenario: ${JSON.stringify(from)} is not in ${JSON.stringify(text)}`);
  return text.slice(0, at) + to + text.slice(at + from.length);
};
/** JSON arguments (Kimi, DeepSeek V3): a stray comma after the word. */
const breakJson = (text: string, word: string) => replaceOnce(text, `{"word": "${word}"`, `{"word": "${word}",,`);

export const FAMILIES: Family[] = [
  {
    family: 'Kimi K2',
    renderer: 'kimi_k2',
    tokenizerDir: kimiTokenizer,
    callId: (name, i) => `functions.${name}:${i}`,
    breakCall: breakJson,
    brokenError: 'Invalid JSON: ',
    blockClose: '<|tool_calls_section_end|>',
    toolResponse: '<|im_system|>lookup<|im_middle|>## Return of functions.lookup:0\ncat: a small feline (2)<|im_end|>',
  },
  {
    family: 'Kimi K2.5',
    renderer: 'kimi_k25',
    tokenizerDir: kimiTokenizer,
    callId: (name, i) => `functions.${name}:${i}`,
    breakCall: breakJson,
    brokenError: 'Invalid JSON: ',
    blockClose: '<|tool_calls_section_end|>',
    toolResponse: '<|im_system|>lookup<|im_middle|>## Return of functions.lookup:0\ncat: a small feline (2)<|im_end|>',
  },
  {
    family: 'DeepSeek V3',
    renderer: 'deepseekv3',
    tokenizerDir: () => shippedTokenizerDir('deepseek_v3'),
    breakCall: breakJson,
    brokenError: 'Invalid JSON: ',
    blockClose: '<｜tool▁calls▁end｜>',
    toolResponse: '<｜tool▁output▁begin｜>cat: a small feline (2)<｜tool▁output▁end｜>',
  },
  {
    family: 'DeepSeek V4.1',
    renderer: 'deepseekv4_1',
    tokenizerDir: deepseekV4_1Tokenizer,
    breakCall: (text, word) => {
      const param = `<｜DSML｜ parameter name="word" string="true">${word}</｜DSML｜ parameter>`;
      return replaceOnce(text, param, `stray text${param}`);
    },
    brokenError: 'Invalid DSML: text outside parameters',
    blockClose: '</｜DSML｜ calls>',
    toolResponse: '<｜User｜><tool_result>cat: a small feline (2)</tool_result><｜Assistant｜>',
  },
  {
    family: 'GLM 5.3',
    renderer: 'glm5_3_max_reasoning',
    tokenizerDir: glmTokenizer,
    breakCall: (text, word) => replaceOnce(text, `<arg_value>${word}</arg_value>`, `<arg_value>${word}</arg_value>stray text`),
    brokenError: 'Unexpected content between tool call arguments',
    blockClose: '</tool_call>',
    // As the reference's: a `<tool_call>` left open is not detected; the turn reads as an answer.
    detectsUnterminated: false,
    toolResponse: '<|observation|><tool_response>cat: a small feline (2)</tool_response><|assistant|>',
  },
  {
    family: 'Nemotron 3',
    renderer: 'nemotron3',
    tokenizerDir: nemotronTokenizer,
    breakCall: (text, word) => replaceOnce(text, `<parameter=word>\n${word}\n</parameter>`, `stray text\n<parameter=word>\n${word}\n</parameter>`),
    brokenError: 'Unexpected non-parameter content inside <function> block',
    blockClose: '</tool_call>',
    toolResponse: '<|im_start|>user\n<tool_response>\ncat: a small feline (2)\n</tool_response>\n<|im_end|>',
  },
];

export const QUESTION: Message = { role: 'user', content: 'Define cat.' };
export const ANSWER = 'A cat is a small feline.';

/** The ParseErrorPolicy the policy scenarios run under (one corrective message, then the terminal reward). */
export const POLICY = { max_consecutive: 1, penalty_per_error: 0.2, terminal_reward: -1, mask_error_turns: true };

export interface Scenario {
  id: string;
  actions: number[][];
  policy?: typeof POLICY;
  maxTurns?: number;
}

export interface FamilySetup {
  tokenizer: Tokenizer;
  renderer: Renderer;
  initial: (tools: ToolSpec[]) => Message[];
  scenarios: Scenario[];
}

interface ToolRenderer extends Renderer {
  createConversationPrefixWithTools(tools: ToolSpec[], systemPrompt?: string): Message[];
}

/**
 * The family's renderer on its stand-in tokenizer, and the scenarios' actions. `lookupSpec` is the
 * declaration the initial prompt carries (the tool built in the test).
 */
export async function familySetup(f: Family, lookupSpec: ToolSpec): Promise<FamilySetup> {
  const dir = f.tokenizerDir();
  // Named by folder, so families sharing a stand-in (Kimi K2 and K2.5) load it once.
  const tokenizer = await getTokenizer(`agent-env:${dir}`, dir);
  const renderer = getRenderer(f.renderer, tokenizer) as ToolRenderer;
  const initial = (tools: ToolSpec[]) => [...renderer.createConversationPrefixWithTools(tools), QUESTION];
  const prompt = initial([lookupSpec]);
  const stops = renderer.getStopSequences();
  const stop = typeof stops[0] === 'number' ? (stops[0] as number) : undefined;

  /** The trained tokens of `assistant` after the prompt: what the policy samples, ending with the stop token. */
  const sampled = (assistant: Message): number[] => {
    const { modelInput, weights } = renderer.buildSupervisedExample([...prompt, assistant], 'last_assistant_message');
    const tokens = modelInputToInts(modelInput).filter((_, i) => weights[i] > 0);
    // A turn the template closes with the next message's header (DeepSeek V3's tool calls) ends,
    // when sampled, at the stop token.
    if (stop !== undefined && !(stops as number[]).includes(tokens.at(-1)!)) tokens.push(stop);
    return tokens;
  };
  const calls = (...args: Array<[string, string]>): Message => ({
    role: 'assistant',
    content: '',
    tool_calls: args.map(([name, a], i): ToolCall => ({ type: 'function', id: f.callId?.(name, i) ?? null, function: { name, arguments: a } })),
  });
  /** `tokens` as text, changed, and encoded again (the special tokens stay single tokens). */
  const edited = (tokens: number[], change: (text: string) => string): number[] => {
    const body = stop !== undefined && tokens.at(-1) === stop ? tokens.slice(0, -1) : tokens;
    const text = tokenizer.decode(body, { skipSpecialTokens: false });
    const out = tokenizer.encode(change(text), { addSpecialTokens: false });
    return stop !== undefined && body !== tokens ? [...out, stop] : out;
  };

  const good = sampled(calls(['lookup', '{"word": "cat", "limit": 2}']));
  const answer = sampled({ role: 'assistant', content: ANSWER });
  const badCalls = sampled(
    calls(['multiply', '{"a": 2, "b": 3}'], ['lookup', '{"word": "cat", "limit": "two"}'], ['lookup', '{"limit": 2}']),
  );
  const twoCalls = sampled(calls(['lookup', '{"word": "cat", "limit": 2}'], ['lookup', '{"word": "dog", "limit": 1}']));
  const malformed = edited(sampled(calls(['lookup', '{"word": "dog", "limit": 1}'])), (t) => f.breakCall(t, 'dog'));
  const mixed = edited(twoCalls, (t) => f.breakCall(t, 'dog'));
  const unterminated = edited(good, (t) => replaceOnce(t, f.blockClose, ''));
  const noStop = stop !== undefined ? good.slice(0, -1) : good;

  const scenarios: Scenario[] = [
    { id: 'call, then answer', actions: [good, answer] },
    { id: 'unknown tool, bad argument, missing argument', actions: [badCalls, answer] },
    { id: 'malformed call', actions: [malformed] },
    { id: 'unterminated tool block', actions: [unterminated] },
    { id: 'valid and malformed calls in one turn', actions: [mixed, answer] },
    { id: 'no stop token (broken framing)', actions: [noStop] },
    { id: 'malformed calls under a ParseErrorPolicy', actions: [malformed, good, malformed, malformed], policy: POLICY, maxTurns: 8 },
    { id: 'broken framing under a ParseErrorPolicy', actions: [noStop], policy: POLICY },
  ];
  return { tokenizer, renderer, initial, scenarios };
}
