// DeepSeek V4.1 family renderers (reference renderers/deepseek_v4_1.py, after the
// DeepSeek-V4.1-Flash chat template):
//
//   <｜begin▁of▁sentence｜><｜System｜>Reasoning Effort: 75 (…)\n\n{system}<｜User｜>{question}
//   <｜Assistant｜><think>{reasoning}</think>{answer}<｜end▁of▁sentence｜>
//
// (no line breaks between turns in reality). Thinking mode always opens with `<｜System｜>` and
// the effort line; chat mode has no effort line and its assistant header ends in `</think>`.
// Tool calls are DSML blocks after the answer; tool results are `<tool_result>` blocks in a user
// turn. Reasoning before the last user turn is dropped unless tools are declared.

import type { ModelInput } from '../../backends/types.js';
import { RendererError } from '../errors.js';
import { textChunk } from '../model-input.js';
import type { Tokenizer } from '../tokenizer.js';
import { BaseRenderer, parseResponseForStopToken, requireSingleToken } from './base.js';
import { detectUnterminatedToolBlock, ensureText, parseThinkBlocks } from './content.js';
import {
  CALLS_BLOCK_RE,
  CALLS_CLOSE,
  CALLS_OPEN,
  DSML_MARKER,
  effortLine,
  isUserTurn,
  lastUserTurnIndex,
  normalizeMessages,
  parseToolCallsBlock,
  renderToolCalls,
  splitAssistantContent,
  toolDeclareContent,
} from './deepseek-v4-1-format.js';
import { isPyBlank } from './py-whitespace.js';
import type { NamedRendererFactory } from './registry.js';
import {
  TrainOnWhat,
  type Message,
  type ParseResult,
  type RenderContext,
  type RenderedMessage,
  type Role,
  type SupervisedExample,
  type ToolSpec,
} from './types.js';

/** Thinking mode, high reasoning effort: the template's defaults. */
export class DeepSeekV4_1Renderer extends BaseRenderer {
  /**
   * Set while a conversation builder runs: assistant messages at or before this index render
   * without reasoning (−1: none). The template decides that from the whole conversation, while
   * renderMessage sees one message; a set value also marks the base class's re-entry (its
   * generation-prompt check) with an already normalized prefix, which must not be reshaped twice.
   */
  private dropReasoningThrough: number | undefined;

  constructor(
    name: string,
    tokenizer: Tokenizer,
    readonly stripThinkingFromHistory = true,
  ) {
    super(name, tokenizer);
  }

  /** Reasoning budget (1-100), or null for chat mode. */
  get reasoningEffort(): number | null {
    return 75;
  }

  private get thinking(): boolean {
    return this.reasoningEffort !== null;
  }

  override get hasExtensionProperty(): boolean {
    return !(this.thinking && this.stripThinkingFromHistory);
  }

  private encode(text: string): number[] {
    return this.tokenizer.encode(text, { addSpecialTokens: false });
  }

  private singleToken(text: string): number {
    return requireSingleToken(this.tokenizer, text, this.name);
  }

  /**
   * Encode `prefix + text` as one string and split the tokens at the prefix. BPE can merge
   * across the boundary (the effort line's `\n\n` with a tools-only system message's leading
   * `\n\n`); a merged token goes with the prefix.
   */
  private encodeAfter(prefix: string, text: string): [number[], number[]] {
    const tokens = this.encode(prefix + text);
    const prefixLength = [...prefix].length; // code points, as Python's len
    let split = 0;
    while (split < tokens.length && [...this.tokenizer.decode(tokens.slice(0, split))].length < prefixLength) split++;
    return [tokens.slice(0, split), tokens.slice(split)];
  }

  protected override get bosTokens(): number[] {
    return this.encode('<｜begin▁of▁sentence｜>');
  }

  private get endMessageToken(): number {
    return this.singleToken('<｜end▁of▁sentence｜>');
  }

  getStopSequences(): number[] {
    return [this.endMessageToken];
  }

  /** Text before the first message: the system marker and, in thinking mode, the effort. */
  private opening(role: Role): string {
    const effort = this.reasoningEffort;
    if (effort !== null) return '<｜System｜>' + effortLine(effort);
    return role === 'system' ? '<｜System｜>' : '';
  }

  /** A later system message counts as a user turn, as in the template. */
  protected override lastAssistantTurnStartIndex(messages: readonly Message[]): number {
    let last = -1;
    messages.forEach((m, idx) => {
      if (m.role === 'user' || (m.role === 'system' && idx > 0)) last = idx;
    });
    return last + 1;
  }

  /** Renders one message of a conversation already shaped by normalizeMessages. */
  renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    const role = message.role;
    const opening = ctx.idx === 0 ? this.opening(role) : '';

    if (role === 'system') {
      const [header, output] = this.encodeAfter(ctx.idx === 0 ? opening : '<｜System｜>', ensureText(message.content));
      return { header: textChunk(header), output: output.length ? [textChunk(output)] : [] };
    }
    if (role === 'tool_declare') return { output: [] }; // already folded into the system message

    if (isUserTurn(message)) {
      // The turn's first message carries the whole turn.
      if (ctx.prevMessage && isUserTurn(ctx.prevMessage)) return { output: [] };
      const text = this.encode(ensureText(message.content));
      return {
        header: textChunk(this.encode(opening + '<｜User｜>')),
        output: text.length ? [textChunk(text)] : [],
      };
    }
    if (role !== 'assistant') throw new RendererError(`Unsupported role for DeepSeek V4.1: ${role}`);

    const keepsReasoning = this.thinking && ctx.idx > (this.dropReasoningThrough ?? -1);
    // The template closes a user turn with the assistant marker; with no such turn before this
    // message (only the first system message, or another assistant), there is none.
    const prev = ctx.prevMessage;
    const followsUserTurn = prev !== undefined && (isUserTurn(prev) || (prev.role === 'system' && ctx.idx > 1));
    const marker = '<｜Assistant｜>' + (keepsReasoning ? '<think>' : '</think>');
    const headerText = opening + (followsUserTurn ? marker : '');
    const [reasoning, answer] = splitAssistantContent(message);
    let body = (keepsReasoning ? reasoning + '</think>' : '') + answer;
    if (message.tool_calls?.length) body += renderToolCalls(message.tool_calls);
    return {
      ...(headerText ? { header: textChunk(this.encode(headerText)) } : {}),
      output: [textChunk([...this.encode(body), this.endMessageToken])],
    };
  }

  /** Runs a builder on the template-shaped conversation, with the reasoning cut-off in force. */
  private inConversation<T>(messages: Message[], build: (normalized: Message[]) => T): T {
    if (this.dropReasoningThrough !== undefined) return build(messages);
    const normalized = normalizeMessages(messages);
    const drops = this.stripThinkingFromHistory && !messages.some((m) => m.role === 'tool_declare');
    this.dropReasoningThrough = drops ? lastUserTurnIndex(normalized) : -1;
    try {
      return build(normalized);
    } finally {
      this.dropReasoningThrough = undefined;
    }
  }

  override buildGenerationPrompt(messages: Message[], role: Role = 'assistant', prefill?: string): ModelInput {
    return this.inConversation(messages, (n) => super.buildGenerationPrompt(n, role, prefill));
  }

  /** Tool and user messages sharing a user turn are trained or masked together, as one. */
  override buildSupervisedExample(
    messages: Message[],
    trainOnWhat: TrainOnWhat = TrainOnWhat.LAST_ASSISTANT_MESSAGE,
  ): SupervisedExample {
    return this.inConversation(messages, (n) => super.buildSupervisedExample(n, trainOnWhat));
  }

  /** Thinking mode prefills `<think>`; put it back when the sampled reasoning closes. */
  private normalizeResponseTokens(tokens: number[]): number[] {
    if (!this.thinking) return tokens;
    const open = this.singleToken('<think>');
    const close = this.singleToken('</think>');
    return tokens.includes(close) && tokens[0] !== open ? [open, ...tokens] : tokens;
  }

  parseResponse(tokens: number[]): ParseResult {
    const result = parseResponseForStopToken(this.normalizeResponseTokens(tokens), this.tokenizer, this.endMessageToken);
    if (!result.ok) return result;
    const message = result.message;
    let content = message.content as string;

    const block = CALLS_BLOCK_RE.exec(content);
    const { toolCalls, unparsed } = block ? parseToolCallsBlock(block[0]) : { toolCalls: [], unparsed: [] };
    if (block) {
      // The format ends the response with one calls block; anything after it is malformed.
      const after = content.slice(block.index + block[0].length);
      if (!isPyBlank(after)) unparsed.push({ raw_text: after, error: 'Invalid DSML: output after calls block' });
      content = content.slice(0, block.index);
    }
    let dangling = detectUnterminatedToolBlock(content, CALLS_OPEN, CALLS_CLOSE);
    if (!dangling && content.includes(DSML_MARKER)) {
      dangling = { raw_text: content, error: 'Invalid DSML: marker outside a calls block' };
    }
    if (dangling) unparsed.push(dangling);
    if (toolCalls.length) message.tool_calls = toolCalls;
    if (unparsed.length) message.unparsed_tool_calls = unparsed;

    message.content = parseThinkBlocks(content) ?? content;
    return result;
  }

  /**
   * The system message and tool declaration. The tools render after the system prompt in the
   * same `<｜System｜>` turn; they stay a separate `tool_declare` message so the renderer can tell
   * tools are declared, which keeps history reasoning.
   */
  createConversationPrefixWithTools(tools: ToolSpec[], systemPrompt = ''): Message[] {
    const messages: Message[] = [];
    if (systemPrompt) messages.push({ role: 'system', content: systemPrompt });
    if (tools.length) messages.push({ role: 'tool_declare', content: toolDeclareContent(tools) });
    return messages;
  }
}

/** Thinking mode with low reasoning effort (`reasoning_effort='low'`). */
export class DeepSeekV4_1LowReasoningRenderer extends DeepSeekV4_1Renderer {
  override get reasoningEffort(): number | null {
    return 50;
  }
}

/** Thinking mode with max reasoning effort (`reasoning_effort='max'`). */
export class DeepSeekV4_1MaxReasoningRenderer extends DeepSeekV4_1Renderer {
  override get reasoningEffort(): number | null {
    return 100;
  }
}

/** Chat mode (`thinking_mode='chat'`): no reasoning, no effort line. */
export class DeepSeekV4_1DisableThinkingRenderer extends DeepSeekV4_1Renderer {
  override get reasoningEffort(): number | null {
    return null;
  }
}

export const DEEPSEEK_V4_1_RENDERERS: Record<string, NamedRendererFactory> = {
  deepseekv4_1: (name, t) => new DeepSeekV4_1Renderer(name, t),
  deepseekv4_1_low_reasoning: (name, t) => new DeepSeekV4_1LowReasoningRenderer(name, t),
  deepseekv4_1_max_reasoning: (name, t) => new DeepSeekV4_1MaxReasoningRenderer(name, t),
  deepseekv4_1_disable_thinking: (name, t) => new DeepSeekV4_1DisableThinkingRenderer(name, t),
  deepseekv4_1_preserve_thinking: (name, t) => new DeepSeekV4_1Renderer(name, t, false),
};
