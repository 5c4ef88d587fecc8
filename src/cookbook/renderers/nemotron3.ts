// Nemotron-3 renderers (reference renderers/nemotron3.py): `nemotron3`, `nemotron3_low_thinking`,
// `nemotron3_disable_thinking`, `nemotron3_preserve_thinking` (3 Nano / 3 Super) and the Ultra
// format `nemotron3_ultra`, `nemotron3_ultra_disable_thinking`, `nemotron3_ultra_medium_thinking`,
// `nemotron3_ultra_preserve_thinking` (3 Ultra, 3.5 Lightning, 3.5 Super).
//
// Qwen3.5's chat format, except: every assistant turn whose thinking is not written gets an empty
// `<think></think>` (history included), one newline (Ultra: none) after `</think>`, tool responses
// and tool calls each end with a newline, a system block is always written (empty if none), the
// disable-thinking prompt ends `<think></think>`, and tools are declared in XML after the system
// prompt (see nemotron3-tools.ts). Only the Ultra format renders image parts (each `<img>…</img>`,
// labelled `<image N>` when a message has several), as only it is given an image processor by the
// reference; the 3 Nano/Super renderers refuse them.

import { RendererError } from '../errors.js';
import type { Tokenizer } from '../tokenizer.js';
import { hasThinking } from './content.js';
import { nemotron3ConversationPrefixWithTools, type Nemotron3ToolSpec } from './nemotron3-tools.js';
import { Qwen3_5Renderer } from './qwen3-5.js';
import { pyStripWs } from './py-whitespace.js';
import type { VLPart } from './qwen3-vl.js';
import type { NamedRendererFactory } from './registry.js';
import type { Content, Message, RenderContext, RenderedMessage, Role } from './types.js';

const text = (t: string): VLPart => ({ type: 'text', text: t });

/** The disable-thinking prompt: an empty, closed think block with no trailing newlines. */
function disabledThinkingSuffix(tokenizer: Tokenizer, role: Role, ctx: RenderContext): number[] {
  return tokenizer.encode(`${ctx.idx > 0 ? '\n' : ''}<|im_start|>${role}\n<think></think>`, {
    addSpecialTokens: false,
  });
}

export class Nemotron3Renderer extends Qwen3_5Renderer {
  /**
   * Nemotron-3 Nano/Super are text models: the reference's get_renderer gives these renderers no
   * image processor, so an image part is refused (up front here, naming it). The Ultra format
   * (Nemotron-3.5 Super VL among its models) renders images.
   */
  override readonly takesImages: boolean = false;
  /** Newlines the template writes between `</think>` and the text; parsing removes them. */
  protected readonly thinkSeparator: string = '\n';

  /** With thinking preserved, history renders each turn as a supervised example does. */
  override get hasExtensionProperty(): boolean {
    return !this.stripThinkingFromHistory;
  }

  /**
   * The template always writes a system block (its `system_message` defaults to ""). Applied by
   * both builders after the input is checked, so an error names the caller's message indices.
   */
  protected override prepareMessages(messages: Message[]): Message[] {
    if (messages.length && messages[0].role === 'system') return messages;
    return [{ role: 'system', content: '' }, ...messages];
  }

  /** Whether this turn's thinking (if any) is dropped: history before the last user message. */
  protected isStrippedHistory(ctx: RenderContext): boolean {
    return this.stripThinkingFromHistory && ctx.idx < ctx.lastUserIndex;
  }

  /**
   * `<think></think>` on every assistant turn whose thinking is not written. When a history
   * turn's thinking is stripped and text follows, the template keeps the newline that followed
   * `</think>` (it splits on `</think>`), unless the turn has tool calls, whose branch trims it.
   */
  protected override assistantHeaderSuffix(message: Message, ctx: RenderContext): string {
    const reasoned = hasThinking(message.content);
    if (reasoned && !this.isStrippedHistory(ctx)) return '';
    if (reasoned && Array.isArray(message.content)) {
      const hasText = message.content.some((p) => p.type === 'text' && p.text);
      if (hasText && !message.tool_calls?.length) return '<think></think>\n';
    }
    return '<think></think>';
  }

  /** Only string content is trimmed: the template leaves parts as they are. */
  protected override trimContent(content: Content): Content {
    return typeof content === 'string' ? pyStripWs(content) : content;
  }

  /**
   * Thinking is stripped only before the last user message (the template's `loop.index0 <
   * last_user_idx`), not from every non-last turn: a turn after the last user message is
   * rendered as if it were the last one.
   */
  override renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    if (message.role === 'assistant' && ctx.idx >= ctx.lastUserIndex && !ctx.isLast) {
      ctx = { ...ctx, isLast: true };
    }
    return super.renderMessage(message, ctx);
  }

  protected override formatThinkingText(thinking: string): string {
    return `<think>\n${thinking}\n</think>\n`;
  }

  /**
   * The Nemotron-3.5 Super processor's image framing: `<img>…</img>`, on a new line after text,
   * labelled `<image N>` (counted per message) when the message has several images.
   */
  protected override wrapImageParts(parts: VLPart[]): VLPart[] {
    const numImages = parts.filter((p) => p.type === 'image').length;
    const chunks: VLPart[] = [];
    let imageIndex = 0;
    let textBefore = ''; // the last non-empty text since the previous image
    for (const part of parts) {
      if (part.type !== 'image') {
        chunks.push(part);
        textBefore = part.text || textBefore;
        continue;
      }
      imageIndex++;
      const newline = textBefore && !textBefore.endsWith('\n') ? '\n' : '';
      const label = numImages > 1 ? `<image ${imageIndex}>` : '';
      chunks.push(text(`${newline}${label}<img>`), part, text('</img>'));
      textBefore = '';
    }
    return chunks;
  }

  /** Each response ends with its own newline (`\n</tool_response>\n`). */
  protected override wrapToolResponseChunks(parts: VLPart[]): VLPart[] {
    return [text('<tool_response>\n'), ...parts, text('\n</tool_response>\n')];
  }

  /** The previous response's trailing newline already separates the next one. */
  protected override toolResponseContinuationHeader(): string {
    return '';
  }

  /**
   * XML tool calls, each followed by a newline, after one newline — none when only a thinking
   * part precedes them, as the formatted thinking already ends with one. (A thinking part, not
   * an inline `<think>` string, which never went through formatThinkingText.)
   */
  protected override formatToolCallsChunks(message: Message): VLPart[] {
    const content = message.content;
    const hasThinkingPart = Array.isArray(content) && content.some((p) => p.type === 'thinking');
    const hasText = Array.isArray(content) && content.some((p) => p.type === 'text' && p.text);
    const prefix = hasThinkingPart && !hasText ? '' : '\n';
    return [text(prefix + this.formatToolCalls(message))];
  }

  /** Every tool call in XML, each with its trailing newline. */
  protected formatToolCalls(message: Message): string {
    return (message.tool_calls ?? []).map((c) => this.formatToolCallXml(c) + '\n').join('');
  }

  /** Drop the separator after `</think>` before Qwen3.5's post-processing (a no-op for it then). */
  protected override postprocessParsedMessage(message: Message): void {
    const content = message.content;
    if (this.thinkSeparator && Array.isArray(content)) {
      let seenThinking = false;
      for (const p of content) {
        if (p.type === 'thinking') {
          seenThinking = true;
        } else if (seenThinking && p.type === 'text') {
          if (p.text.startsWith(this.thinkSeparator)) p.text = p.text.slice(this.thinkSeparator.length);
          break;
        }
      }
    }
    super.postprocessParsedMessage(message);
  }

  /** The system message declaring `tools` in Nemotron-3's XML, after the system prompt. */
  override createConversationPrefixWithTools(tools: Nemotron3ToolSpec[], systemPrompt = ''): Message[] {
    return nemotron3ConversationPrefixWithTools(tools, systemPrompt);
  }
}

/** Low-effort reasoning (3 Super only): the last user message asks for it. Text-only. */
export class Nemotron3LowThinkingRenderer extends Nemotron3Renderer {
  override renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    if (message.role === 'user' && ctx.idx === ctx.lastUserIndex) {
      if (typeof message.content !== 'string') {
        throw new RendererError(
          `${this.name}: Nemotron-3 low-thinking mode is text-only; list content is not supported in the last ` +
            'user message',
        );
      }
      message = { ...message, content: `${message.content}\n\n{reasoning effort: low}` };
    }
    return super.renderMessage(message, ctx);
  }
}

/** Thinking disabled: the generation prompt closes an empty think block. */
export class Nemotron3DisableThinkingRenderer extends Nemotron3Renderer {
  override readonly disablesThinking = true;

  // Only the token suffix changes: what a rendered turn's header shares with the prompt stays
  // Qwen3.5's (generationSuffixStr), as in the reference.
  protected override generationSuffix(role: Role, ctx: RenderContext): number[] {
    return disabledThinkingSuffix(this.tokenizer, role, ctx);
  }
}

/**
 * Nemotron-3 Ultra / 3.5: thinking written `<think>\n…</think>` with no newline before `</think>`
 * or after it, a stripped history turn gets a bare `<think></think>`, and tool calls always follow
 * one newline.
 */
export class Nemotron3UltraRenderer extends Nemotron3Renderer {
  /** Each image framed `<img>…</img>` (wrapImageParts), sized by Nemotron-3.5 Super VL's processor. */
  override readonly takesImages: boolean = true;
  protected override readonly thinkSeparator: string = '';

  protected override assistantHeaderSuffix(message: Message, ctx: RenderContext): string {
    return hasThinking(message.content) && !this.isStrippedHistory(ctx) ? '' : '<think></think>';
  }

  protected override formatThinkingText(thinking: string): string {
    return `<think>\n${thinking}</think>`;
  }

  protected override formatToolCallsChunks(message: Message): VLPart[] {
    return [text('\n' + this.formatToolCalls(message))];
  }
}

/** Medium-effort reasoning (Ultra, 3.5 Super): the last user message asks for it. */
export class Nemotron3UltraMediumThinkingRenderer extends Nemotron3UltraRenderer {
  override renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    if (message.role === 'user' && ctx.idx === ctx.lastUserIndex) {
      const suffix = '\n\n{reasoning effort: efficient}';
      const content = message.content;
      message = {
        ...message,
        content: typeof content === 'string' ? content + suffix : [...content, { type: 'text', text: suffix }],
      };
    }
    return super.renderMessage(message, ctx);
  }
}

/** Ultra format with thinking disabled (the reference's Ultra + DisableThinking mix-in). */
export class Nemotron3UltraDisableThinkingRenderer extends Nemotron3UltraRenderer {
  override readonly disablesThinking = true;

  protected override generationSuffix(role: Role, ctx: RenderContext): number[] {
    return disabledThinkingSuffix(this.tokenizer, role, ctx);
  }
}

// The preserve-thinking variants are the base classes with history thinking kept (HF's
// `truncate_history_thinking=False`), which also gives them the extension property.
export const NEMOTRON3_RENDERERS: Record<string, NamedRendererFactory> = {
  nemotron3: (name, t) => new Nemotron3Renderer(name, t),
  nemotron3_low_thinking: (name, t) => new Nemotron3LowThinkingRenderer(name, t),
  nemotron3_disable_thinking: (name, t) => new Nemotron3DisableThinkingRenderer(name, t),
  nemotron3_preserve_thinking: (name, t) => new Nemotron3Renderer(name, t, { stripThinkingFromHistory: false }),
  nemotron3_ultra: (name, t) => new Nemotron3UltraRenderer(name, t),
  nemotron3_ultra_disable_thinking: (name, t) => new Nemotron3UltraDisableThinkingRenderer(name, t),
  nemotron3_ultra_medium_thinking: (name, t) => new Nemotron3UltraMediumThinkingRenderer(name, t),
  nemotron3_ultra_preserve_thinking: (name, t) =>
    new Nemotron3UltraRenderer(name, t, { stripThinkingFromHistory: false }),
};
