// Kimi K2 renderer (reference renderers/kimi_k2.py): `kimi_k2`, Moonshot's Kimi-K2-Thinking format
//
//   <|im_system|>system<|im_middle|>You are Kimi, …<|im_end|>
//   <|im_user|>user<|im_middle|>Q<|im_end|>
//   <|im_assistant|>assistant<|im_middle|><think>reasoning</think>A<|im_end|>
//
// A default system message is inserted when the conversation has none (as Kimi's HF template
// does), history keeps only empty `<think></think>` blocks, and the "turn" whose reasoning is
// kept starts after the last assistant message that did not call a tool.

import { RendererError } from '../errors.js';
import { textChunk } from '../model-input.js';
import type { Tokenizer } from '../tokenizer.js';
import type { EncodedTextChunk, ModelInputChunk } from '../../backends/types.js';
import { BaseRenderer, parseResponseForStopToken, requireSingleToken, warnOnce } from './base.js';
import { detectUnterminatedToolBlock, ensureText, parseThinkBlocks } from './content.js';
import { pyJsonDumpValue, pyJsonError } from './py-json.js';
import { PY_WS_CLASS, pyStripWs } from './py-whitespace.js';
import type { NamedRendererFactory } from './registry.js';
import {
  TrainOnWhat,
  type ContentPart,
  type Message,
  type ParseResult,
  type RenderContext,
  type RenderedMessage,
  type SupervisedExample,
  type ToolCall,
  type ToolSpec,
  type UnparsedToolCall,
} from './types.js';

export const KIMI_DEFAULT_SYSTEM_PROMPT = 'You are Kimi, an AI assistant created by Moonshot AI.';

// Both spellings of the section markers occur in Kimi outputs; the first complete section wins.
const TOOL_CALLS_SECTION_RE = new RegExp(
  '<\\|tool_calls_section_begin\\|>([\\s\\S]*?)<\\|tool_calls_section_end\\|>' +
    '|<\\|tool_call_section_begin\\|>([\\s\\S]*?)<\\|tool_call_section_end\\|>',
);
// `\s` in the reference's pattern is Python's whitespace.
const WS = `[${PY_WS_CLASS}]*`;
const TOOL_CALL_RE = new RegExp(
  `<\\|tool_call_begin\\|>${WS}([^<]+:\\p{Nd}+)${WS}<\\|tool_call_argument_begin\\|>` +
    `${WS}([\\s\\S]*?)${WS}<\\|tool_call_end\\|>`,
  'gu',
);

const DANGLING_MARKERS: ReadonlyArray<readonly [string, string]> = [
  ['<|tool_calls_section_begin|>', '<|tool_calls_section_end|>'],
  ['<|tool_call_section_begin|>', '<|tool_call_section_end|>'],
  ['<|tool_call_begin|>', '<|tool_call_end|>'],
];

/** Text before the first tool-calls section, and the section's inside (undefined if none). */
function splitToolCallsSection(content: string): { text: string; section?: string } {
  const m = TOOL_CALLS_SECTION_RE.exec(content);
  if (!m) return { text: content };
  // Whatever follows the section is dropped, as in the reference.
  return { text: content.slice(0, m.index), section: m[1] ?? m[2] };
}

/** `functions.get_weather:0` → `get_weather`. */
function toolNameFromId(toolId: string): string {
  if (!toolId) return '';
  const namePart = toolId.split(':', 1)[0];
  const dot = namePart.indexOf('.');
  return dot === -1 ? namePart : namePart.slice(dot + 1);
}

function parseToolCallsSection(section: string): { calls: ToolCall[]; unparsed: UnparsedToolCall[] } {
  const calls: ToolCall[] = [];
  const unparsed: UnparsedToolCall[] = [];
  for (const m of section.matchAll(TOOL_CALL_RE)) {
    const toolId = pyStripWs(m[1]);
    const args = pyStripWs(m[2]);
    const error = pyJsonError(args);
    if (error !== undefined) {
      unparsed.push({ raw_text: m[0], error: `Invalid JSON: ${error}` });
      continue;
    }
    // The arguments stay as sampled (not re-serialised).
    calls.push({ type: 'function', id: toolId || null, function: { name: toolNameFromId(toolId), arguments: args } });
  }
  return { calls, unparsed };
}

export class KimiK2Renderer extends BaseRenderer {
  constructor(
    name: string,
    tokenizer: Tokenizer,
    readonly stripThinkingFromHistory = true,
  ) {
    super(name, tokenizer);
  }

  protected get imEnd(): number {
    return requireSingleToken(this.tokenizer, '<|im_end|>', this.name);
  }

  protected encode(text: string): number[] {
    // Special tokens in message text are recognised, as in the reference (no escaping).
    return this.tokenizer.encode(text, { addSpecialTokens: false });
  }

  /**
   * Kimi's template adds the default system message when none is given: after a leading
   * tool_declare message, else at the front.
   */
  protected override prepareMessages(messages: Message[]): Message[] {
    const defaultSystem: Message = { role: 'system', content: KIMI_DEFAULT_SYSTEM_PROMPT };
    if (messages.length === 0) return [defaultSystem];
    const first = messages[0].role;
    if (first === 'tool_declare') {
      if (messages.length >= 2 && messages[1].role === 'system') return messages;
      return [messages[0], defaultSystem, ...messages.slice(1)];
    }
    return first === 'system' ? messages : [defaultSystem, ...messages];
  }

  private header(message: Message): string {
    const role = message.role;
    if (role === 'user') return `<|im_user|>${role}<|im_middle|>`;
    if (role === 'assistant') return `<|im_assistant|>${role}<|im_middle|>`;
    if (role !== 'tool') return `<|im_system|>${role}<|im_middle|>`; // system, tool_declare, others
    // A tool result is a system-style message named after the tool, tied to its call by id.
    let roleName = message.name;
    if (!roleName) {
      warnOnce(
        'kimi/tool-name',
        "Tool message missing 'name' field. Using 'tool' as fallback. Consider setting 'name' to match " +
          'the tool function name for better context.',
      );
      roleName = role;
    }
    const callId = message.tool_call_id ?? '';
    if (!callId) {
      warnOnce(
        'kimi/tool-call-id',
        `Tool message missing 'tool_call_id' field. ${this.name} needs it to render tool results ` +
          "correctly; it should match ToolCall.id from the assistant's tool_calls.",
      );
    }
    return `<|im_system|>${roleName}<|im_middle|>## Return of ${callId}\n`;
  }

  private assistantText(message: Message, ctx: RenderContext): string {
    const parts: ContentPart[] =
      typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    let thinking = '';
    let text = '';
    for (const p of parts) {
      if (p.type === 'thinking') thinking += p.thinking;
      else if (p.type === 'text') text += p.text;
    }
    const keepsThinking = ctx.inLastAssistantTurn || !this.stripThinkingFromHistory;
    let out = (keepsThinking && thinking ? `<think>${thinking}</think>` : '<think></think>') + text;
    const calls = message.tool_calls ?? [];
    if (calls.length) {
      out += '<|tool_calls_section_begin|>';
      calls.forEach((call, idx) => {
        const id = call.id || `functions.${call.function.name}:${idx}`;
        out += `<|tool_call_begin|>${id}<|tool_call_argument_begin|>${call.function.arguments}<|tool_call_end|>`;
      });
      out += '<|tool_calls_section_end|>';
    }
    return out + '<|im_end|>';
  }

  /** Content of several parts (e.g. text and images) in a non-assistant message. */
  protected encodeMultipartContent(_parts: ContentPart[]): ModelInputChunk[] {
    throw new RendererError(`Multipart/Image content encoding is not supported for the ${this.name} renderer`);
  }

  renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    const header = textChunk(this.encode(this.header(message)));
    const content = message.content;
    let output: ModelInputChunk[];
    if (message.role === 'assistant') {
      output = [textChunk(this.encode(this.assistantText(message, ctx)))];
    } else if (typeof content === 'string' || (content.length === 1 && content[0].type === 'text')) {
      output = [textChunk(this.encode(ensureText(content) + '<|im_end|>'))];
    } else {
      output = this.encodeMultipartContent([...content, { type: 'text', text: '<|im_end|>' }]);
    }
    return { header, output };
  }


  /**
   * The last-message/last-turn modes give one example; the others give one example per user
   * turn (ending before the next user message), since history is rendered without reasoning.
   */
  override buildSupervisedExamples(
    messages: Message[],
    trainOnWhat: TrainOnWhat = TrainOnWhat.LAST_ASSISTANT_TURN,
  ): SupervisedExample[] {
    if (trainOnWhat === TrainOnWhat.LAST_ASSISTANT_MESSAGE || trainOnWhat === TrainOnWhat.LAST_ASSISTANT_TURN) {
      return [this.buildSupervisedExample(messages, trainOnWhat)];
    }
    if (trainOnWhat !== TrainOnWhat.ALL_ASSISTANT_MESSAGES) {
      warnOnce(
        'kimi/split-turns',
        `train_on_what=${trainOnWhat} with ${this.name}, which lacks the extension property: the same ` +
          'train_on_what is applied to every user turn, which may not be what you want.',
      );
    }
    const userIdxs = messages.flatMap((m, i) => (m.role === 'user' ? [i] : []));
    return [...userIdxs.slice(1), messages.length].map((end) =>
      this.buildSupervisedExample(
        messages.slice(0, end),
        trainOnWhat === TrainOnWhat.ALL_ASSISTANT_MESSAGES ? TrainOnWhat.LAST_ASSISTANT_TURN : trainOnWhat,
      ),
    );
  }

  /**
   * Kimi's template keeps the reasoning of every assistant message after the last one that did
   * not call a tool, so the produced turn spans the whole assistant/tool exchange.
   */
  protected override lastAssistantTurnStartIndex(messages: readonly Message[]): number {
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i];
      if (m.role === 'assistant' && !(m.tool_calls && m.tool_calls.length)) return i + 1;
    }
    return 0;
  }

  getStopSequences(): number[] {
    return [this.imEnd];
  }

  /** Restores tokens the generation prompt prefilled (none for K2). */
  protected normalizeResponseTokens(tokens: number[]): number[] {
    return tokens;
  }

  parseResponse(tokens: number[]): ParseResult {
    const result = parseResponseForStopToken(this.normalizeResponseTokens(tokens), this.tokenizer, this.imEnd);
    if (!result.ok) return result;
    const message = result.message;
    const content = message.content as string;
    const { text, section } = splitToolCallsSection(content);
    if (section !== undefined) {
      const { calls, unparsed } = parseToolCallsSection(section);
      if (calls.length) message.tool_calls = calls;
      if (unparsed.length) message.unparsed_tool_calls = unparsed;
    }
    for (const [open, close] of DANGLING_MARKERS) {
      const dangling = detectUnterminatedToolBlock(content, open, close);
      if (dangling) {
        message.unparsed_tool_calls = [...(message.unparsed_tool_calls ?? []), dangling];
        break;
      }
    }
    message.content = parseThinkBlocks(text) ?? text;
    return result;
  }

  /** OpenAI chat format; Kimi's template reads reasoning from a separate `reasoning_content`. */
  toOpenAIMessage(message: Message): Record<string, unknown> {
    const out: Record<string, unknown> = { role: message.role };
    const content = message.content;
    if (typeof content === 'string') {
      out.content = content;
    } else {
      const thinking = content.flatMap((p) => (p.type === 'thinking' ? [p.thinking] : []));
      out.content = content.map((p) => (p.type === 'text' ? p.text : '')).join('');
      if (thinking.length) out.reasoning_content = thinking.join('');
    }
    if (message.tool_calls && message.tool_calls.length) {
      out.tool_calls = message.tool_calls.map((tc) => ({
        type: 'function',
        id: tc.id ?? null,
        function: { name: tc.function.name, arguments: tc.function.arguments },
      }));
    }
    if (message.role === 'tool') {
      if (message.tool_call_id !== undefined) out.tool_call_id = message.tool_call_id;
      if (message.name !== undefined) out.name = message.name;
    }
    return out;
  }

  /**
   * The tool_declare body: K2 takes the OpenAI tool schema as compact, key-sorted JSON
   * (`json.dumps(…, separators=(",", ":"), sort_keys=True)`).
   */
  protected formatToolDeclaration(tools: ToolSpec[]): string {
    const declared = tools.map((tool) => ({ type: 'function', function: tool }));
    return pyJsonDumpValue(declared, { separators: [',', ':'], sortKeys: true });
  }

  /**
   * Messages to put before a conversation that may call `tools`: the tool_declare message first
   * (as Kimi's template orders them), then the system message (the default one if none given).
   */
  createConversationPrefixWithTools(tools: ToolSpec[], systemPrompt = ''): Message[] {
    const out: Message[] = [];
    if (tools.length) out.push({ role: 'tool_declare', content: this.formatToolDeclaration(tools) });
    out.push({ role: 'system', content: systemPrompt || KIMI_DEFAULT_SYSTEM_PROMPT });
    return out;
  }
}

export const KIMI_K2_RENDERERS: Record<string, NamedRendererFactory> = {
  kimi_k2: (name, t) => new KimiK2Renderer(name, t),
};
