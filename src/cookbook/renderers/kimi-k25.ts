// Kimi K2.5 / K2.6 renderers (reference renderers/kimi_k25.py and kimi_k26.py): the K2 format,
// plus a generation prompt that prefills `<think>` (thinking on) or `<think></think>` (thinking
// off), TypeScript-style tool declarations, and text and image parts of multipart messages encoded
// one by one. K2.6 renders exactly like K2.5; its preserve-thinking variant keeps reasoning in history.

import type { ModelInput, ModelInputChunk } from '../../backends/types.js';
import { RendererError } from '../errors.js';
import { textChunk } from '../model-input.js';
import type { Tokenizer } from '../tokenizer.js';
import { requireSingleToken } from './base.js';
import { renderImagePart } from './image-parts.js';
import { KimiK2Renderer } from './kimi-k2.js';
import { encodeToolsToTypescriptStyle } from './kimi-tool-declaration.js';
import type { NamedRendererFactory } from './registry.js';
import type { ContentPart, Message, Role, ToolSpec } from './types.js';

export class KimiK25Renderer extends KimiK2Renderer {
  /** What the generation prompt prefills before any caller prefill. */
  protected readonly thinkPrefill: string = '<think>';
  private readonly thinkOpen: number;
  private readonly thinkClose: number;

  constructor(name: string, tokenizer: Tokenizer, stripThinkingFromHistory = true) {
    super(name, tokenizer, stripThinkingFromHistory);
    this.thinkOpen = requireSingleToken(tokenizer, '<think>', name);
    this.thinkClose = requireSingleToken(tokenizer, '</think>', name);
  }

  override readonly takesImages: boolean = true;

  /** Each image framed as `<|media_begin|>image<|media_content|>` … `<|media_end|>\n`. */
  protected override encodeMultipartContent(parts: ContentPart[]): ModelInputChunk[] {
    let images = 0;
    return parts.flatMap((p): ModelInputChunk[] => {
      if (p.type === 'text') return [textChunk(this.encode(p.text))];
      if (p.type === 'image') {
        const where = `a ${this.name} message, image ${++images}`;
        return [
          textChunk(this.encode('<|media_begin|>image<|media_content|>')),
          renderImagePart(p, this.imageProcessor, this.name, where),
          textChunk(this.encode('<|media_end|>\n')),
        ];
      }
      throw new RendererError(`Unsupported content type: ${p.type}`);
    });
  }

  override buildGenerationPrompt(messages: Message[], role: Role = 'assistant', prefill?: string): ModelInput {
    return super.buildGenerationPrompt(messages, role, this.thinkPrefill + (prefill ?? ''));
  }

  /** The prompt prefilled `<think>`: put it back when the sample closes a think block. */
  protected override normalizeResponseTokens(tokens: number[]): number[] {
    if (tokens.length && tokens[0] !== this.thinkOpen && tokens.includes(this.thinkClose)) {
      return [this.thinkOpen, ...tokens];
    }
    return tokens;
  }

  /** K2.5's template declares tools in TypeScript style rather than JSON. */
  protected override formatToolDeclaration(tools: ToolSpec[]): string {
    return encodeToolsToTypescriptStyle(tools.map((tool) => ({ type: 'function', function: tool })));
  }
}

/** Thinking off: the generation prompt prefills a closed, empty think block. */
export class KimiK25DisableThinkingRenderer extends KimiK25Renderer {
  override readonly disablesThinking = true;
  protected override readonly thinkPrefill: string = '<think></think>';
}

/** K2.6 with HF's `preserve_thinking=true`: every historical turn keeps its reasoning. */
export class KimiK26PreserveThinkingRenderer extends KimiK25Renderer {
  constructor(name: string, tokenizer: Tokenizer) {
    super(name, tokenizer, false);
  }
}

export const KIMI_K25_RENDERERS: Record<string, NamedRendererFactory> = {
  kimi_k25: (name, t) => new KimiK25Renderer(name, t),
  kimi_k25_disable_thinking: (name, t) => new KimiK25DisableThinkingRenderer(name, t),
  kimi_k26: (name, t) => new KimiK25Renderer(name, t),
  kimi_k26_disable_thinking: (name, t) => new KimiK25DisableThinkingRenderer(name, t),
  kimi_k26_preserve_thinking: (name, t) => new KimiK26PreserveThinkingRenderer(name, t),
};
