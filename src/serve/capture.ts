// `cookbook serve --capture`: every exchange through the server (OpenAI chat and text completions,
// Anthropic messages) becomes wire rows in the capture store (src/capture/), one per sampled
// sequence: the prompt's tokens and its rendered text, the sampled tokens and logprobs, and in the
// row's metadata the request and the response as the client sent and got them, the conversation as
// the renderer saw it, each sample parsed back into a message (tool calls included), the session.
//
// The server hands over each finished exchange (ServeOptions.onExchange, exchange.ts); its rows go
// to a bounded exporter. Enqueueing never waits and never throws: a full queue drops rows (counted,
// logged while serving, and reported at shutdown) rather than slowing sampling.
import type { ModelInput } from '../backends/types.js';
import type { CaptureExporter } from '../capture/exporter.js';
import type { JsonValue, WireRowInput } from '../capture/rows.js';
import { conversationFromOpenAI, type OpenAIChatMessage, type OpenAITool } from '../cookbook/renderers/openai-format.js';
import type { Message } from '../cookbook/renderers/types.js';
import { conversationFromAnthropic } from './anthropic/conversation.js';
import type { CountTokensRequest } from './anthropic/requests.js';
import type { ServedExchange } from './exchange.js';
import type { ServedModel } from './served-model.js';

/** The header a client sends to group its exchanges into one session (an agent's conversation). */
export const SESSION_HEADER = 'x-cookbook-session';
/** The `purpose` of every row from serve. */
export const SERVE_PURPOSE = 'serve';

type CapturedExchange = ServedExchange;

export interface ServeCaptureOptions {
  /** The rows' run_id (default "serve"). */
  runId?: string;
  /** Where losses are reported while serving (one line at most every few seconds). */
  log?: (line: string) => void;
}

const LOSS_REPORT_INTERVAL_MS = 5000;

export class ServeCapture {
  readonly runId: string;
  private readonly log: (line: string) => void;
  private reportedLosses = 0;
  private lastReport = 0;
  private exchanges = 0;
  private next = 0;
  /** Time spent building and enqueueing rows: what capture adds to the serving path (sending runs beside it). */
  private recordMs = 0;

  constructor(
    readonly exporter: CaptureExporter,
    private readonly model: ServedModel,
    options: ServeCaptureOptions = {},
  ) {
    this.runId = options.runId ?? 'serve';
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  }

  /** ServeOptions.onExchange: the exchange's rows to the exporter. Never throws. */
  readonly record = (x: CapturedExchange): void => {
    if (x.samples.length === 0) return;
    const t0 = performance.now();
    try {
      const id = `serve-${process.pid}-${Date.now().toString(36)}-${(this.next++).toString(36)}`;
      for (const row of exchangeRows(x, id, this.model, this.runId)) this.exporter.enqueue({ type: 'wire_row', row });
      this.exchanges += 1;
    } catch (err) {
      // Capture never fails a request that was answered: this exchange's rows are lost, and said so.
      this.log(`capture: could not record a ${x.api} exchange: ${(err as Error).message}`);
    }
    this.reportLosses();
    this.recordMs += performance.now() - t0;
  };

  private reportLosses(): void {
    const c = this.exporter.counters();
    const losses = c.dropped + c.failed + c.invalid;
    const now = Date.now();
    if (losses > this.reportedLosses && now - this.lastReport >= LOSS_REPORT_INTERVAL_MS) {
      this.log(`capture: ${c.dropped} rows dropped (queue full), ${c.failed} failed to send, ${c.invalid} invalid so far`);
      this.reportedLosses = losses;
      this.lastReport = now;
    }
  }

  /** Sends what is queued (waiting at most `timeoutMs`); one line saying what was kept and what was lost. */
  async close(timeoutMs = 10_000): Promise<string> {
    await this.exporter.close(timeoutMs);
    const c = this.exporter.counters();
    const perExchange = this.exchanges ? ` (${(this.recordMs / this.exchanges).toFixed(2)} ms each to record)` : '';
    return `capture: ${this.exchanges} exchanges${perExchange}, ${c.sent} rows stored, ${c.dropped} dropped (queue full), ${c.failed} failed to send, ${c.invalid} invalid, ${c.queued} unsent`;
  }
}

/** The session an exchange belongs to: the header, else Anthropic's metadata.user_id, else OpenAI's `user`. */
function sessionOf(x: CapturedExchange): string | null {
  const header = x.headers?.[SESSION_HEADER];
  if (header) return Array.isArray(header) ? header[0] : header;
  const body = (x.request ?? {}) as { metadata?: { user_id?: unknown } | null; user?: unknown };
  if (typeof body.metadata?.user_id === 'string') return body.metadata.user_id;
  if (typeof body.user === 'string') return body.user;
  return null;
}

/** The conversation the prompt was rendered from, as the route built it (null for text completions). */
function conversationOf(x: CapturedExchange, model: ServedModel): Message[] | null {
  try {
    if (x.api === 'openai.chat.completions') {
      const r = x.request as { messages: OpenAIChatMessage[]; tools?: OpenAITool[] | null; tool_choice?: unknown };
      return conversationFromOpenAI(model.renderer, r.messages, r.tools, r.tool_choice);
    }
    if (x.api === 'anthropic.messages') return conversationFromAnthropic(model.renderer, x.request as CountTokensRequest).conversation;
  } catch {
    // The request was answered, so it converted then; should it not now, the rows go without it.
  }
  return null;
}

function promptTokensOf(prompt: ModelInput): { tokens: number[]; images: number } {
  const tokens: number[] = [];
  let images = 0;
  for (const c of prompt.chunks) {
    if (c.type === 'encoded_text') tokens.push(...c.tokens);
    else images += 1;
  }
  return { tokens, images };
}

function parsedMessage(model: ServedModel, tokens: number[]): Message {
  try {
    return model.renderer.parseResponse(tokens).message;
  } catch {
    return { role: 'assistant', content: model.tokenizer.decode(tokens) };
  }
}

const hasToolCalls = (m: Message) => (m.tool_calls?.length ?? 0) > 0;

/** Images stay out of the store (their bytes); their place is kept. */
function withoutImages(conversation: Message[] | null): Message[] | null {
  if (!conversation) return null;
  return conversation.map((m) =>
    typeof m.content === 'string' ? m : { ...m, content: m.content.map((p) => (p.type === 'image' ? { type: 'text' as const, text: '<image>' } : p)) },
  );
}

/**
 * The exchange's wire rows: one per sampled sequence, keyed (exchange id, sampling call, sample):
 * the store's dedupe key, unique per exchange.
 */
export function exchangeRows(
  x: CapturedExchange,
  exchangeId: string,
  model: ServedModel,
  runId: string,
): WireRowInput[] {
  const session = sessionOf(x);
  const conversation = withoutImages(conversationOf(x, model));
  const tools = (x.request as { tools?: unknown } | null)?.tools;
  const toolsOffered = Array.isArray(tools) ? tools.length : 0;
  const conversationUsedTools = (conversation ?? []).some((m) => m.role === 'tool' || hasToolCalls(m));
  const rows: WireRowInput[] = [];
  x.samples.forEach((call, seqId) => {
    const { tokens: promptTokens, images } = promptTokensOf(call.prompt);
    const promptText = model.tokenizer.decode(promptTokens);
    call.sequences.forEach((seq, sampleIdx) => {
      const completion = parsedMessage(model, seq.tokens);
      const metadata = {
        api: x.api,
        exchange_id: exchangeId,
        session_id: session,
        model: model.id,
        base_model: model.baseModel,
        renderer: model.renderer.name,
        prompt_text: promptText,
        prompt_images: images,
        sampled_text: model.tokenizer.decode(seq.tokens),
        stop_reason: seq.stop_reason,
        sampling_params: { ...call.params },
        messages: conversation,
        completion,
        tools_offered: toolsOffered,
        tool_calls: completion.tool_calls?.length ?? 0,
        tool_use: hasToolCalls(completion) || conversationUsedTools,
        request: x.request ?? null,
        response: x.response ?? null,
        error: x.error ?? null,
        duration_ms: x.durationMs,
      };
      rows.push({
        run_id: runId,
        purpose: SERVE_PURPOSE,
        sampling_session_id: exchangeId,
        seq_id: seqId,
        sample_idx: sampleIdx,
        policy_version: model.id,
        created_at: x.startedAt / 1000,
        prompt_tokens: promptTokens,
        sampled_tokens: seq.tokens,
        logprobs: seq.logprobs ?? null,
        // Through JSON: undefined fields go, and what is stored is what a reader gets back.
        metadata: JSON.parse(JSON.stringify(metadata)) as JsonValue,
      });
    });
  });
  return rows;
}
