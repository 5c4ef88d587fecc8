// RoleColon renderer (spec §6.3): "User: Q\n\nAssistant: A\n\n", every piece encoded on its own.

import { textChunk } from '../model-input.js';
import { BaseRenderer, parseResult } from './base.js';
import { ensureText, pyCapitalize } from './content.js';
import type { Message, ParseResult, RenderContext, RenderedMessage } from './types.js';

// Shared by render and parse so they stay inverses.
const CONTENT_PREFIX = ' ';
const CONTENT_SUFFIX = '\n\n';
const STOP = '\n\nUser:';

export class RoleColonRenderer extends BaseRenderer {
  override get hasExtensionProperty(): boolean {
    return true;
  }

  protected override get bosTokens(): number[] {
    const bos = this.tokenizer.bosToken;
    return bos === undefined ? [] : this.tokenizer.encode(bos, { addSpecialTokens: false });
  }

  renderMessage(message: Message, _ctx: RenderContext): RenderedMessage {
    const enc = (s: string) => textChunk(this.tokenizer.encode(s, { addSpecialTokens: false }));
    return {
      header: enc(pyCapitalize(message.role) + ':'),
      output: [enc(CONTENT_PREFIX + ensureText(message.content) + CONTENT_SUFFIX)],
      // "User:" completes the "\n\nUser:" stop sequence after an assistant turn; the reference
      // really appends the "<UNUSED>" placeholder when a non-assistant message ends an example.
      stopOverlap: enc(message.role === 'assistant' ? 'User:' : '<UNUSED>'),
    };
  }

  getStopSequences(): string[] {
    return [STOP];
  }

  parseResponse(tokens: number[]): ParseResult {
    let response = tokens;
    let endedWithEos = false;
    if (response.length > 0 && response[response.length - 1] === this.tokenizer.eosTokenId) {
      response = response.slice(0, -1);
      endedWithEos = true;
    }
    const text = this.tokenizer.decode(response);
    const pieces = text.split(STOP);
    let content = pieces[0];
    if (content.startsWith(CONTENT_PREFIX)) content = content.slice(CONTENT_PREFIX.length);
    if (content.endsWith(CONTENT_SUFFIX)) content = content.slice(0, -CONTENT_SUFFIX.length);
    const message: Message = { role: 'assistant', content };
    if (pieces.length === 1) return parseResult(message, endedWithEos ? 'eos' : 'malformed');
    if (pieces.length === 2) return parseResult(message, endedWithEos ? 'malformed' : 'stop_sequence');
    return parseResult(message, 'malformed');
  }
}
