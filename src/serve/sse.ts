// Server-sent events as the OpenAI API streams them: `data: <json>` events and a final
// `data: [DONE]`. The Tinker protocol returns a sample whole, so a stream opens at once (the role
// chunk, with comments to keep proxies from timing out while the backend samples) and carries the
// completion in a few chunks when it is ready: reasoning, text, tool calls, then the finish reason.
import type { ServerResponse } from 'node:http';
import type { ChatCompletion, Usage } from './chat-completion.js';
import type { ApiError } from './errors.js';
import type { TextCompletion } from './text-completion.js';

const KEEPALIVE_MS = 10_000;

export class EventStream {
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
    res.flushHeaders();
    this.timer = setInterval(() => this.write(': keep-alive\n\n'), KEEPALIVE_MS);
    // A client that hangs up leaves the sample to finish unread; nothing more is written.
    res.once('close', () => clearInterval(this.timer));
  }

  private write(text: string): void {
    if (!this.res.writableEnded && !this.res.destroyed) this.res.write(text);
  }

  send(data: unknown): void {
    this.write(`data: ${JSON.stringify(data)}\n\n`);
  }

  /** After an error the stream carries it as an event (what the OpenAI clients raise) and ends. */
  fail(err: ApiError): void {
    this.send(err.body());
    this.end();
  }

  end(): void {
    clearInterval(this.timer);
    if (!this.res.writableEnded && !this.res.destroyed) this.res.end('data: [DONE]\n\n');
  }
}

export interface StreamHead {
  id: string;
  created: number;
  model: string;
}

const chatChunk = (head: StreamHead, choices: unknown[], extra: Record<string, unknown> = {}) => ({ id: head.id, object: 'chat.completion.chunk', created: head.created, model: head.model, choices, ...extra });

/** The first chunk of each choice, sent before sampling ends. */
export function chatStart(stream: EventStream, head: StreamHead, n: number): void {
  for (let index = 0; index < n; index++) stream.send(chatChunk(head, [{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]));
}

export function chatRest(stream: EventStream, head: StreamHead, result: ChatCompletion, includeUsage: boolean): void {
  for (const c of result.choices) {
    const { message } = c;
    const delta = (d: Record<string, unknown>, logprobs: unknown = null) => stream.send(chatChunk(head, [{ index: c.index, delta: d, logprobs, finish_reason: null }]));
    if (message.reasoning_content) delta({ reasoning_content: message.reasoning_content });
    if (message.content || c.logprobs) delta({ content: message.content ?? '' }, c.logprobs);
    if (message.tool_calls) delta({ tool_calls: message.tool_calls.map((t, i) => ({ index: i, ...t })) });
    stream.send(chatChunk(head, [{ index: c.index, delta: {}, logprobs: null, finish_reason: c.finish_reason }]));
  }
  if (includeUsage) stream.send(chatChunk(head, [], { usage: result.usage }));
}

export function completionRest(stream: EventStream, head: StreamHead, result: TextCompletion, includeUsage: boolean): void {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id: head.id, object: 'text_completion', created: head.created, model: head.model, choices, ...extra });
  for (const c of result.choices) {
    if (c.text || c.logprobs) stream.send(chunk([{ index: c.index, text: c.text, logprobs: c.logprobs, finish_reason: null }]));
    stream.send(chunk([{ index: c.index, text: '', logprobs: null, finish_reason: c.finish_reason }]));
  }
  if (includeUsage) stream.send(chunk([], { usage: result.usage satisfies Usage }));
}
