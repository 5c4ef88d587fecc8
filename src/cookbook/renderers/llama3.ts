// Llama 3 renderer (spec §6.4). Unlike HF's stock template there is no date preamble, and
// content is not trimmed.

import { textChunk } from '../model-input.js';
import { BaseRenderer, parseResponseForStopToken } from './base.js';
import { ensureText } from './content.js';
import type { Message, ParseResult, RenderContext, RenderedMessage } from './types.js';

export class Llama3Renderer extends BaseRenderer {
  override get hasExtensionProperty(): boolean {
    return true;
  }

  protected override get bosTokens(): number[] {
    return this.tokenizer.encode('<|begin_of_text|>', { addSpecialTokens: false });
  }

  private get eotToken(): number {
    return this.tokenizer.tokenToId('<|eot_id|>');
  }

  renderMessage(message: Message, _ctx: RenderContext): RenderedMessage {
    const enc = (s: string) => textChunk(this.tokenizer.encode(s, { addSpecialTokens: false }));
    return {
      header: enc(`<|start_header_id|>${message.role}<|end_header_id|>\n\n`),
      // Special tokens in the content are recognised, as in the reference (no escaping).
      output: [enc(ensureText(message.content) + '<|eot_id|>')],
    };
  }

  getStopSequences(): number[] {
    return [this.eotToken];
  }

  parseResponse(tokens: number[]): ParseResult {
    return parseResponseForStopToken(tokens, this.tokenizer, this.eotToken);
  }
}
