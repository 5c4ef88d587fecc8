// ServeCapture (src/serve/capture.ts) without a server: an exchange's rows (keys, session, tool
// use), and a store that does not keep up: recording never waits, rows past the queue are dropped,
// counted, said on the log while serving and again at shutdown.
import { describe, expect, it } from 'vitest';
import { CaptureExporter, type CaptureSink } from '../../src/capture/exporter.js';
import type { JsonValue } from '../../src/capture/rows.js';
import { rendererForModel } from '../../src/cookbook/renderers/for-model.js';
import { captureStoreUrl } from '../../src/capture/target.js';
import { exchangeRows, ServeCapture } from '../../src/serve/capture.js';
import type { ServedExchange } from '../../src/serve/exchange.js';
import type { ServedModel } from '../../src/serve/served-model.js';

async function tinyModel(): Promise<ServedModel> {
  const { renderer, tokenizer } = await rendererForModel('tiny-qwen3');
  return { id: 'tiny-qwen3', baseModel: 'tiny-qwen3', baseUrl: 'http://unused', renderer, tokenizer, maxContextLength: undefined, sample: () => Promise.reject(new Error('not here')), close: async () => {} };
}

function exchange(model: ServedModel, request: Record<string, unknown>, headers: Record<string, string> = {}): ServedExchange {
  const prompt = model.renderer.buildGenerationPrompt([{ role: 'user', content: 'hi' }]);
  const sampled = model.tokenizer.encode('hello', { addSpecialTokens: false });
  return {
    api: 'openai.chat.completions',
    model: model.id,
    request: { model: model.id, messages: [{ role: 'user', content: 'hi' }], ...request },
    headers,
    response: { id: 'chatcmpl-1' },
    samples: [{ prompt, params: { max_tokens: 4, temperature: 0, top_p: 1, top_k: -1 }, sequences: [{ stop_reason: 'length', tokens: sampled, logprobs: sampled.map(() => -0.5) }, { stop_reason: 'length', tokens: sampled, logprobs: sampled.map(() => -0.25) }] }],
    startedAt: 1_700_000_000_000,
    durationMs: 12,
  } as ServedExchange;
}

describe('ServeCapture', () => {
  it('one row per sequence keyed by exchange, call and sample; the session from the header, else the body', async () => {
    const model = await tinyModel();
    const rows = exchangeRows(exchange(model, { user: 'u-1' }, { 'x-cookbook-session': 'agent-7' }), 'x-1', model, 'serve');
    expect(rows.map((r) => [r.sampling_session_id, r.seq_id, r.sample_idx])).toEqual([
      ['x-1', 0, 0],
      ['x-1', 0, 1],
    ]);
    expect((rows[0].metadata as Record<string, JsonValue>).session_id).toBe('agent-7');
    expect((exchangeRows(exchange(model, { user: 'u-1' }), 'x-2', model, 'serve')[0].metadata as Record<string, JsonValue>).session_id).toBe('u-1');
    const withTool = exchange(model, {
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'done' },
      ],
    });
    const meta = exchangeRows(withTool, 'x-3', model, 'serve')[0].metadata as Record<string, JsonValue>;
    expect([meta.tools_offered, meta.tool_use, meta.created_at]).toEqual([1, true, undefined]);
    expect(rows[0].created_at).toBe(1_700_000_000);
  });

  it('an Anthropic tool loop: the conversation as the renderer saw it (tool call and result), tool use, metadata.user_id as session', async () => {
    const model = await tinyModel();
    const x: ServedExchange = {
      ...exchange(model, {}),
      api: 'anthropic.messages',
      request: {
        model: model.id,
        max_tokens: 8,
        metadata: { user_id: 'harness-1' },
        tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
        ],
      },
    };
    const meta = exchangeRows(x, 'x-4', model, 'serve')[0].metadata as { session_id: string; tool_use: boolean; tools_offered: number; messages: Array<{ role: string; tool_calls?: Array<{ function: { name: string } }> }> };
    expect([meta.session_id, meta.tool_use, meta.tools_offered]).toEqual(['harness-1', true, 1]);
    expect(meta.messages.filter((m) => m.role !== 'system').map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(meta.messages.find((m) => m.role === 'assistant')!.tool_calls![0].function.name).toBe('get_weather');
  });

  it('a store that does not keep up: drops counted, logged while serving and at shutdown, and recording never waits', async () => {
    const model = await tinyModel();
    const hang: CaptureSink = { export: (_records, signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))) };
    const lines: string[] = [];
    const exporter = new CaptureExporter(hang, { maxQueueSize: 3, maxBatchSize: 1, exportTimeoutMs: 200, log: (l) => lines.push(l) });
    const capture = new ServeCapture(exporter, model, { log: (l) => lines.push(l) });
    const t0 = performance.now();
    for (let i = 0; i < 4; i++) capture.record(exchange(model, {})); // 8 rows into a queue of 3
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(exporter.counters().dropped).toBe(5);
    // Said once on the first loss (then at most every few seconds), in full at shutdown.
    expect(lines).toEqual(['capture: 1 rows dropped (queue full), 0 failed to send, 0 invalid so far']);
    const closing = await capture.close(100);
    expect(closing).toMatch(/^capture: 4 exchanges \([\d.]+ ms each to record\), 0 rows stored, 5 dropped \(queue full\), \d+ failed to send, 0 invalid, \d+ unsent$/);
  });

  it('a --capture URL that is no store fails at start, naming it', async () => {
    const closed = 'http://127.0.0.1:9'; // the discard port: nothing listens on it here
    await expect(captureStoreUrl(closed)).rejects.toThrow(`no capture store answers at ${closed}`);
  });
});
