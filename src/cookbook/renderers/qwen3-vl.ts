// Qwen3-VL renderers (reference renderers/qwen3.py: Qwen3VLRenderer, Qwen3VLInstructRenderer):
// `qwen3_vl` and `qwen3_vl_instruct`. Same chat format as Qwen3, but a message is assembled from
// text/image parts with overridable hooks (header suffix, thinking format, tool-call chunks, …)
// that the Qwen3.5 / Qwen3.8 / Nemotron-3 renderers build on. Each image part becomes an ImageChunk
// between `<|vision_start|>` and `<|vision_end|>`, sized by the model's image processor.

import type { EncodedTextChunk, ModelInputChunk } from '../../backends/types.js';
import { textChunk } from '../model-input.js';
import type { Tokenizer } from '../tokenizer.js';
import { toolCallPayloadJson } from './content.js';
import { renderImagePart } from './image-parts.js';
import { Qwen3Renderer } from './qwen3.js';
import type { NamedRendererFactory } from './registry.js';
import type { ImagePart, Message, RenderContext, RenderedMessage, TextPart } from './types.js';

/** What a VL message is assembled from before tokenization. */
export type VLPart = TextPart | ImagePart;

export interface Qwen3VLOptions {
  /** Drop thinking from earlier assistant messages (default true, as HF's template does). */
  stripThinkingFromHistory?: boolean;
  /** Tokenize a run of text parts as one string, as `apply_chat_template` does (default true). */
  mergeTextChunks?: boolean;
}

const text = (t: string): TextPart => ({ type: 'text', text: t });

/** Merge consecutive text parts so a message tokenizes like the template's single string. */
function mergeConsecutiveTextParts(parts: VLPart[]): VLPart[] {
  const merged: VLPart[] = [];
  for (const p of parts) {
    const last = merged[merged.length - 1];
    if (p.type === 'text' && last?.type === 'text') merged[merged.length - 1] = text(last.text + p.text);
    else merged.push(p);
  }
  return merged;
}

export class Qwen3VLRenderer extends Qwen3Renderer {
  override readonly takesImages: boolean = true;
  /**
   * Qwen3.5-family templates keep one `<|im_start|>user` block open around a run of consecutive
   * tool responses; Qwen3/Qwen3-VL close each response in its own block.
   */
  protected readonly groupsConsecutiveToolResponses: boolean = false;
  readonly mergeTextChunks: boolean;

  constructor(name: string, tokenizer: Tokenizer, options: Qwen3VLOptions = {}) {
    super(name, tokenizer, options.stripThinkingFromHistory ?? true);
    this.mergeTextChunks = options.mergeTextChunks ?? true;
  }

  /** How a thinking part is written into the content. */
  protected formatThinkingText(thinking: string): string {
    return `<think>${thinking}</think>`;
  }

  /** Text the assistant header carries after `<|im_start|>assistant\n` (e.g. an empty think block). */
  protected assistantHeaderSuffix(_message: Message, _ctx: RenderContext): string {
    return '';
  }

  /** Content as text/image parts: thinking written as text (or dropped), images wrapped. */
  protected preprocessMessageParts(message: Message, stripThinking: boolean): VLPart[] {
    const content = message.content;
    const parts: VLPart[] = [];
    if (typeof content === 'string') {
      parts.push(text(content));
    } else {
      for (const p of content) {
        if (p.type === 'text' || p.type === 'image') parts.push(p);
        else if (p.type === 'thinking' && !stripThinking) parts.push(text(this.formatThinkingText(p.thinking)));
      }
    }
    return this.wrapImageParts(parts);
  }

  /** Each image between `<|vision_start|>` and `<|vision_end|>`. */
  protected wrapImageParts(parts: VLPart[]): VLPart[] {
    return parts.flatMap((p) => (p.type === 'image' ? [text('<|vision_start|>'), p, text('<|vision_end|>')] : [p]));
  }

  protected wrapToolResponseChunks(parts: VLPart[]): VLPart[] {
    return [text('<tool_response>\n'), ...parts, text('\n</tool_response>')];
  }

  /**
   * What stands in for the header of a tool response that continues a grouped run. Qwen3.5
   * templates write `'\n<tool_response>\n'` per response, so the continuation starts with the
   * newline the first response got from its header.
   */
  protected toolResponseContinuationHeader(): string {
    return '\n';
  }

  /**
   * Whether this message's thinking is dropped: every non-last assistant message when history is
   * stripped. (The HF template keeps reasoning after the last user message; the reference keeps
   * this over-stripping for checkpoints trained on it. Qwen3.8 overrides it.)
   */
  protected stripsThinkingFor(message: Message, ctx: RenderContext): boolean {
    return this.stripThinkingFromHistory && message.role === 'assistant' && !ctx.isLast;
  }

  /** The message's tool calls, Qwen3's JSON form, after a newline. */
  protected formatToolCallsChunks(message: Message): VLPart[] {
    const calls = (message.tool_calls ?? []).map((c) => `<tool_call>\n${toolCallPayloadJson(c)}\n</tool_call>`);
    return [text('\n' + calls.join('\n'))];
  }

  /** How much of this message's header the generation prompt already wrote ('' = none). */
  protected generationSuffixInHeader(_message: Message, _ctx: RenderContext): string {
    return '';
  }

  override renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    const role = message.role === 'tool' ? 'user' : message.role;
    const grouping = this.groupsConsecutiveToolResponses;
    const isTool = message.role === 'tool';
    const prevIsTool = grouping && ctx.prevMessage?.role === 'tool';
    const nextIsTool = grouping && ctx.nextMessage?.role === 'tool';

    let headerStr: string;
    if (isTool && prevIsTool) {
      // A continuation of a tool-response run: the template keeps the user block open.
      headerStr = this.toolResponseContinuationHeader();
    } else {
      headerStr = `${ctx.idx > 0 ? '\n' : ''}<|im_start|>${role}\n`;
      if (message.role === 'assistant') headerStr += this.assistantHeaderSuffix(message, ctx);
    }

    let parts = this.preprocessMessageParts(message, this.stripsThinkingFor(message, ctx));
    if (isTool) parts = this.wrapToolResponseChunks(parts);
    if (message.tool_calls !== undefined) parts.push(...this.formatToolCallsChunks(message));
    // A grouped tool response followed by another leaves the shared block open for it.
    if (!(isTool && nextIsTool)) parts.push(text('<|im_end|>'));
    if (this.mergeTextChunks) parts = mergeConsecutiveTextParts(parts);

    // Special tokens in the content are recognised (the reference encodes without splitting them).
    const encode = (s: string): EncodedTextChunk => textChunk(this.tokenizer.encode(s, { addSpecialTokens: false }));
    let images = 0;
    const output: ModelInputChunk[] = parts.map((p) =>
      p.type === 'image'
        ? renderImagePart(p, this.imageProcessor, this.name, `message ${ctx.idx}, image ${++images}`)
        : encode(p.text),
    );

    // The part of the header the generation prompt supplies stays the header; the rest of it
    // (e.g. the close of a prefilled think block) is output, as the sampled turn produces it.
    const prefix = this.generationSuffixInHeader(message, ctx);
    if (prefix && headerStr.startsWith(prefix)) {
      const rest = headerStr.slice(prefix.length);
      if (rest) output.unshift(encode(rest));
      headerStr = prefix;
    }
    return { header: encode(headerStr), output };
  }
}

/** Qwen3-VL Instruct models never use `<think>`, so a parsed response is not unframed. */
export class Qwen3VLInstructRenderer extends Qwen3VLRenderer {
  protected override readonly framesThinking: boolean = false;
}

export const QWEN3_VL_RENDERERS: Record<string, NamedRendererFactory> = {
  qwen3_vl: (name, t) => new Qwen3VLRenderer(name, t),
  qwen3_vl_instruct: (name, t) => new Qwen3VLInstructRenderer(name, t),
};
