// Qwen3 family renderers (spec §6.5, the 2026-08 behaviour): `qwen3`, `qwen3_disable_thinking`
// and `qwen3_instruct`. They match Qwen3's own chat template token for token on the turn being
// produced (framed `<think>\n…\n</think>\n\n` block, empty when the turn did not reason).

import { RendererError } from '../errors.js';
import { textChunk } from '../model-input.js';
import type { Tokenizer } from '../tokenizer.js';
import { BaseRenderer, parseResponseForStopToken } from './base.js';
import {
  detectUnterminatedToolBlock,
  hasThinking,
  isToolCall,
  parseContentBlocks,
  pyLstrip,
  pyStrip,
  removeThinking,
  toolCallPayloadJson,
} from './content.js';
import { pyJsonDumps } from '../pyjson.js';
import type { ContentPart, Message, ParseResult, RenderContext, RenderedMessage, Role, ToolSpec } from './types.js';

/** The template's framing of a produced turn's reasoning (present even when empty). */
function frameThinking(reasoning: string): string {
  return '<think>\n' + pyStrip(reasoning, '\n') + '\n</think>\n\n';
}

/** Inverse of `frameThinking` over parsed parts, so render → parse is the identity. */
function unframeThinking(parts: ContentPart[]): ContentPart[] {
  const out: ContentPart[] = [];
  let afterBlock = false;
  for (const p of parts) {
    if (p.type === 'thinking') {
      const reasoning = pyStrip(p.thinking, '\n');
      if (reasoning) out.push({ type: 'thinking', thinking: reasoning });
      // An empty block is dropped, but the text after it was still lstripped when rendered.
      afterBlock = true;
    } else if (p.type === 'text') {
      out.push({ type: 'text', text: afterBlock ? pyLstrip(p.text, '\n') : p.text });
      afterBlock = false;
    } else {
      out.push(p);
      afterBlock = false;
    }
  }
  return out;
}

export class Qwen3Renderer extends BaseRenderer {
  /** The 2507 instruct models never use `<think>`, so they get no framing. */
  protected readonly framesThinking: boolean = true;

  constructor(
    name: string,
    tokenizer: Tokenizer,
    readonly stripThinkingFromHistory = true,
  ) {
    super(name, tokenizer);
  }

  override get hasExtensionProperty(): boolean {
    return !this.stripThinkingFromHistory;
  }

  protected get imEnd(): number {
    return this.tokenizer.tokenToId('<|im_end|>');
  }

  /**
   * The template frames only a turn after the last user message (`loop.index0 >
   * ns.last_query_index`); with history stripped that is exactly the last message. With no user
   * message nothing is framed. Keeping thinking in history frames every assistant turn alike.
   */
  private framesProducedTurn(message: Message, ctx: RenderContext): boolean {
    if (!this.framesThinking || message.role !== 'assistant') return false;
    if (ctx.lastUserIndex < 0) return false;
    return ctx.isLast || !this.stripThinkingFromHistory;
  }

  renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    const role = message.role === 'tool' ? 'user' : message.role;
    const header = `${ctx.idx > 0 ? '\n' : ''}<|im_start|>${role}\n`;
    const content = message.content;
    const frames = this.framesProducedTurn(message, ctx);
    const hasReasoning = hasThinking(content);

    let text: string;
    if (Array.isArray(content)) {
      let parts = content;
      if (this.stripThinkingFromHistory && message.role === 'assistant' && !ctx.isLast) {
        parts = removeThinking(parts);
      }
      const rendered: string[] = [];
      let afterBlock = false;
      for (const p of parts) {
        if (p.type === 'thinking') {
          rendered.push(frames ? frameThinking(p.thinking) : `<think>${p.thinking}</think>`);
          afterBlock = frames;
        } else if (p.type === 'text') {
          // The block already wrote its padding (template: `content.lstrip('\n')`).
          rendered.push(afterBlock ? pyLstrip(p.text, '\n') : p.text);
          afterBlock = false;
        } else {
          throw new RendererError(`${this.name} renders text only; got a ${p.type} part`);
        }
      }
      text = rendered.join('');
    } else if (frames && content.includes('</think>')) {
      // Normalise an inline block the way the template does.
      const cut = content.indexOf('</think>');
      const reasoning = content.slice(0, cut);
      const rest = content.slice(cut + '</think>'.length);
      const open = reasoning.lastIndexOf('<think>');
      text = frameThinking(open === -1 ? reasoning : reasoning.slice(open + '<think>'.length)) + pyLstrip(rest, '\n');
    } else {
      text = content;
    }

    // The template's tool-call separator asks about the message's own text, before the empty
    // block (framing, not content) is prepended.
    const hasText = text.length > 0;
    if (frames && !hasReasoning) text = frameThinking('') + pyLstrip(text, '\n');
    if (message.role === 'tool') text = `<tool_response>\n${text}\n</tool_response>`;
    if (message.tool_calls !== undefined) {
      const calls = message.tool_calls.map((c) => `<tool_call>\n${toolCallPayloadJson(c)}\n</tool_call>`).join('\n');
      text += (hasText ? '\n' : '') + calls;
    }

    return {
      header: textChunk(this.tokenizer.encode(header, { addSpecialTokens: false })),
      output: [
        // split_special_tokens: quoted `<|im_end|>` etc. in message text can never form turn markers.
        textChunk(this.tokenizer.encode(text, { addSpecialTokens: false, splitSpecialTokens: true })),
        textChunk([this.imEnd]),
      ],
    };
  }

  getStopSequences(): number[] {
    return [this.imEnd];
  }

  /**
   * The system message that declares `tools` (reference Qwen3Renderer
   * create_conversation_prefix_with_tools, Qwen3's chat template): the system prompt, then each
   * tool as `{"type": "function", "function": spec}` JSON inside `<tools>`, and how to call one.
   */
  createConversationPrefixWithTools(tools: ToolSpec[], systemPrompt = ''): Message[] {
    let toolsText = '';
    if (tools.length) {
      const lines = tools.map((t) => pyJsonDumps({ type: 'function', function: t })).join('\n');
      toolsText =
        '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
        'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
        lines +
        '\n</tools>\n\nFor each function call, return a json object with function name and arguments within ' +
        '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>';
    }
    return [{ role: 'system', content: systemPrompt ? `${systemPrompt}\n\n${toolsText}` : toolsText }];
  }

  parseResponse(tokens: number[]): ParseResult {
    const result = parseResponseForStopToken(tokens, this.tokenizer, this.imEnd);
    if (!result.ok) return result;
    const message = result.message;
    const content = message.content as string;
    const blocks = parseContentBlocks(content);
    if (blocks) {
      message.content = this.framesThinking ? unframeThinking(blocks.parts) : blocks.parts;
      const calls = blocks.toolCalls.filter(isToolCall);
      const unparsed = blocks.toolCalls.filter((t) => !isToolCall(t));
      if (calls.length) message.tool_calls = calls;
      if (unparsed.length) message.unparsed_tool_calls = unparsed as Message['unparsed_tool_calls'];
    }
    const dangling = detectUnterminatedToolBlock(content, '<tool_call>', '</tool_call>');
    if (dangling) message.unparsed_tool_calls = [...(message.unparsed_tool_calls ?? []), dangling];
    return result;
  }
}

/** Thinking disabled: the generation prompt ends with the closed empty block. */
export class Qwen3DisableThinkingRenderer extends Qwen3Renderer {
  override readonly disablesThinking = true;

  override renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    // With no user message the template writes no empty block on the turn, but the generation
    // prompt always opens one; both cannot be honoured.
    const hasContent = typeof message.content === 'string' ? message.content.length > 0 : message.content.length > 0;
    if (message.role === 'assistant' && ctx.isLast && hasContent && ctx.lastUserIndex < 0) {
      throw new RendererError(
        "this conversation has no user message, so Qwen3's template writes no empty think block on the " +
          'produced turn -- but the generation prompt always opens one. Add a user message, or render ' +
          'with thinking enabled.',
      );
    }
    return super.renderMessage(message, ctx);
  }

  protected override generationSuffix(role: Role, ctx: RenderContext): number[] {
    const nl = ctx.idx > 0 ? '\n' : '';
    return this.tokenizer.encode(`${nl}<|im_start|>${role}\n<think>\n\n</think>\n\n`, { addSpecialTokens: false });
  }
}

/** Qwen3 2507 instruct models: no `<think>` framing, extension property always holds. */
export class Qwen3InstructRenderer extends Qwen3Renderer {
  protected override readonly framesThinking: boolean = false;

  override get hasExtensionProperty(): boolean {
    return true;
  }
}
