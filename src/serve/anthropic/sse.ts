// The Messages API's server-sent events: `event: <type>` + `data: <json>`. The Tinker protocol
// returns a sample whole, so the stream opens at once (message_start with the prompt's usage,
// then ping events while the backend samples) and each content block arrives whole when sampling
// ends: content_block_start, one delta (thinking_delta, text_delta or input_json_delta),
// content_block_stop; then message_delta with stop_reason and usage, and message_stop.
import type { ServerResponse } from 'node:http';
import type { ApiError } from '../errors.js';
import { anthropicErrorBody } from './errors.js';
import type { AnthropicMessage, ContentBlock } from './messages.js';

const PING_MS = 10_000;

export class AnthropicEventStream {
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    res.flushHeaders();
    this.timer = setInterval(() => this.send('ping', { type: 'ping' }), PING_MS);
    res.once('close', () => clearInterval(this.timer));
  }

  send(event: string, data: unknown): void {
    if (!this.res.writableEnded && !this.res.destroyed) this.res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** After an error the stream carries it as an `error` event (what the SDKs raise) and ends. */
  fail(err: ApiError): void {
    this.send('error', anthropicErrorBody(err));
    this.end();
  }

  end(): void {
    clearInterval(this.timer);
    if (!this.res.writableEnded && !this.res.destroyed) this.res.end();
  }
}

export interface MessageHead {
  id: string;
  model: string;
}

/** What is known before sampling ends: the message's id and the prompt's size. */
export function messageStart(stream: AnthropicEventStream, head: MessageHead, inputTokens: number): void {
  const usage = { input_tokens: inputTokens, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  stream.send('message_start', { type: 'message_start', message: { ...head, type: 'message', role: 'assistant', content: [], stop_reason: null, stop_sequence: null, usage } });
  stream.send('ping', { type: 'ping' });
}

function blockEvents(block: ContentBlock): { start: ContentBlock; delta: Record<string, unknown> } {
  if (block.type === 'thinking') return { start: { ...block, thinking: '', signature: '' }, delta: { type: 'thinking_delta', thinking: block.thinking } };
  if (block.type === 'text') return { start: { type: 'text', text: '' }, delta: { type: 'text_delta', text: block.text } };
  return { start: { ...block, input: {} }, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } };
}

/** The sampled message's blocks and ending, under the head messageStart sent. */
export function messageRest(stream: AnthropicEventStream, message: AnthropicMessage): void {
  message.content.forEach((block, index) => {
    const { start, delta } = blockEvents(block);
    stream.send('content_block_start', { type: 'content_block_start', index, content_block: start });
    stream.send('content_block_delta', { type: 'content_block_delta', index, delta });
    if (block.type === 'thinking') stream.send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } });
    stream.send('content_block_stop', { type: 'content_block_stop', index });
  });
  stream.send('message_delta', { type: 'message_delta', delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence }, usage: { output_tokens: message.usage.output_tokens } });
  stream.send('message_stop', { type: 'message_stop' });
}
