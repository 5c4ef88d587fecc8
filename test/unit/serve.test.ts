// `cookbook serve` in process, over a scripted sampler: what the real engine cannot be made to
// produce on demand (reasoning and tool calls parsed into the OpenAI message, a stop string cut
// mid-token, a full context window) and what needs a sampler that holds requests (concurrency).
// The real engine and the real OpenAI clients drive the server in test/serve/openai-clients.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelInput, SampleOpts, SampleResponse, SampledSequence, SamplingParams } from '../../src/backends/types.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import { getTokenizer, type Tokenizer } from '../../src/cookbook/tokenizer.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import type { ServedModel } from '../../src/serve/served-model.js';

let tokenizer: Tokenizer;

interface Call {
  prompt: ModelInput;
  n: number;
  params: SamplingParams;
  opts?: SampleOpts;
}

/** A ServedModel whose sampler answers with `script(call)`; every call is recorded. */
function scripted(script: (c: Call) => Promise<SampledSequence[]> | SampledSequence[], opts: { renderer?: string; maxContextLength?: number } = {}) {
  const calls: Call[] = [];
  const model: ServedModel = {
    id: 'scripted-qwen3',
    baseModel: 'tiny-qwen3',
    baseUrl: 'http://scripted.invalid',
    renderer: getRenderer(opts.renderer ?? 'qwen3', tokenizer),
    tokenizer,
    maxContextLength: opts.maxContextLength,
    async sample(prompt, n, params, o): Promise<SampleResponse> {
      const call = { prompt, n, params, opts: o };
      calls.push(call);
      return { sequences: await script(call) };
    },
    close: async () => undefined,
  };
  return { model, calls };
}

const seq = (text: string, extra: number[] = [], stop_reason: 'stop' | 'length' = 'stop'): SampledSequence => {
  const tokens = [...tokenizer.encode(text, { addSpecialTokens: false }), ...extra];
  return { tokens, logprobs: tokens.map((_, i) => -0.1 * (i + 1)), stop_reason };
};

async function post(server: RunningServer, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

const servers: RunningServer[] = [];
async function serve(model: ServedModel, apiKey?: string) {
  const s = await startServer({ model, defaultMaxTokens: 64, apiKey });
  servers.push(s);
  return s;
}

beforeAll(async () => {
  tokenizer = await getTokenizer('tiny-qwen3');
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

const user = [{ role: 'user', content: 'Weather in Paris?' }];

describe('serve: parsing what the model wrote', () => {
  it('reasoning goes to reasoning_content and a tool call to tool_calls, with finish_reason tool_calls', async () => {
    const imEnd = tokenizer.tokenToId('<|im_end|>');
    const { model } = scripted(() => [seq('<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', [imEnd])]);
    const server = await serve(model);
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const r = await post(server, '/chat/completions', { model: model.id, messages: user, tools });
    expect(r.status).toBe(200);
    const { message, finish_reason } = r.body.choices[0];
    expect(finish_reason).toBe('tool_calls');
    expect(message.reasoning_content).toBe('The user wants weather.');
    expect(message.content).toBeNull();
    expect(message.tool_calls).toHaveLength(1);
    expect(message.tool_calls[0]).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
    expect(JSON.parse(message.tool_calls[0].function.arguments)).toEqual({ city: 'Paris' });
    expect(message.tool_calls[0].id).toMatch(/^call_/);
  });

  it('the tool result goes back to the model in the family format, and its answer is plain text', async () => {
    const imEnd = tokenizer.tokenToId('<|im_end|>');
    const { model, calls } = scripted(() => [seq('<think>\n\n</think>\n\nIt is sunny.', [imEnd])]);
    const server = await serve(model);
    const messages = [
      ...user,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ];
    const r = await post(server, '/chat/completions', { model: model.id, messages });
    expect(r.body.choices[0]).toMatchObject({ message: { role: 'assistant', content: 'It is sunny.' }, finish_reason: 'stop' });
    expect(r.body.choices[0].message.reasoning_content).toBeUndefined();
    const prompt = tokenizer.decode(calls[0].prompt.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : [])));
    expect(prompt).toContain('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>');
    expect(prompt).toContain('<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>');
  });

  it('a stop string is cut out of the text, mid-token too, and sent to the sampler with the renderer stop as text', async () => {
    const { model, calls } = scripted(() => [seq('<think>\n\n</think>\n\nalpha beta|END| gamma')]);
    const server = await serve(model);
    const r = await post(server, '/chat/completions', { model: model.id, messages: user, stop: ['ND|', 'zzz'], logprobs: true });
    expect(r.body.choices[0].message.content).toBe('alpha beta|E');
    expect(r.body.choices[0].finish_reason).toBe('stop');
    expect(calls[0].params.stop).toEqual(['ND|', 'zzz', '<|im_end|>']);
    // logprobs cover the tokens wholly before the stop, and the usage counts every sampled token
    const joined = r.body.choices[0].logprobs.content.map((e: { token: string }) => e.token).join('');
    // Qwen3 writes `|END|` as `|`, `END`, `|`: the stop begins inside `END`, which is left out.
    expect(joined).toBe('<think>\n\n</think>\n\nalpha beta|');
    expect(r.body.usage.completion_tokens).toBe(tokenizer.encode('<think>\n\n</think>\n\nalpha beta|END| gamma', { addSpecialTokens: false }).length);
  });

  it('a completion cut at max_tokens finishes with length', async () => {
    const { model, calls } = scripted((c) => [seq('<think>\nlong', [], 'length')].slice(0, c.n));
    const server = await serve(model);
    const r = await post(server, '/chat/completions', { model: model.id, messages: user, max_completion_tokens: 3 });
    expect(r.body.choices[0].finish_reason).toBe('length');
    expect(calls[0].params).toMatchObject({ max_tokens: 3, temperature: 1, stop: [tokenizer.tokenToId('<|im_end|>')] });
  });

  it('a renderer without a tool format refuses tools by name', async () => {
    const { model } = scripted(() => [seq('x')], { renderer: 'role_colon' });
    const server = await serve(model);
    const r = await post(server, '/chat/completions', { model: model.id, messages: user, tools: [{ type: 'function', function: { name: 'f' } }] });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param: 'tools', code: 'unsupported_parameter' });
    expect(r.body.error.message).toContain('role_colon');
  });
});

describe('serve: limits and concurrency', () => {
  it('a prompt longer than the context is a 400 context_length_exceeded; so is prompt + max_tokens', async () => {
    const { model, calls } = scripted(() => [seq('x')], { maxContextLength: 20 });
    const server = await serve(model);
    const long = await post(server, '/chat/completions', { model: model.id, messages: [{ role: 'user', content: 'word '.repeat(40) }] });
    expect(long.status).toBe(400);
    expect(long.body.error).toMatchObject({ code: 'context_length_exceeded', param: 'max_tokens' });
    const over = await post(server, '/completions', { model: model.id, prompt: 'a b c', max_tokens: 50 });
    expect(over.status).toBe(400);
    expect(over.body.error.code).toBe('context_length_exceeded');
    expect(calls).toHaveLength(0);
  });

  it('concurrent requests reach the sampler together (nothing serialises them)', async () => {
    let release!: () => void;
    const allIn = new Promise<void>((r) => (release = r));
    let inFlight = 0;
    const { model } = scripted(async () => {
      if (++inFlight === 4) release();
      // Each call waits until all four are in flight: a server that sampled one at a time would hang here.
      await Promise.race([allIn, new Promise((_, reject) => setTimeout(() => reject(new Error('requests were serialised')), 10_000))]);
      return [seq('ok')];
    });
    const server = await serve(model);
    const results = await Promise.all([0, 1, 2, 3].map((i) => post(server, '/completions', { model: model.id, prompt: `p${i}` })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
  });

  it('a streamed request with bad parameters gets its 400 status, not an error inside a 200 stream', async () => {
    const { model } = scripted(() => [seq('x')]);
    const server = await serve(model);
    const r = await post(server, '/chat/completions', { model: model.id, messages: user, stream: true, presence_penalty: 1 });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ param: 'presence_penalty', code: 'unsupported_parameter' });
  });

  it('a sampler failure after a stream opened ends it with an error event and [DONE]', async () => {
    const { model } = scripted(() => {
      throw new Error('backend fell over');
    });
    const server = await serve(model);
    const res = await fetch(`${server.url}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: model.id, messages: user, stream: true }) });
    expect(res.status).toBe(200);
    const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
    expect(JSON.parse(events[0]).choices[0].delta.role).toBe('assistant');
    expect(JSON.parse(events[1]).error.message).toContain('backend fell over');
    expect(events.at(-1)).toBe('[DONE]');
  });
});
