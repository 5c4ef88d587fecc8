// POST /v1/messages (the Anthropic Messages API) in process, over a scripted sampler, driven by the
// official @anthropic-ai/sdk: what the random tiny model cannot be made to write on demand (a tool
// call, reasoning, a stop sequence inside the text) parsed into Anthropic content blocks, a whole
// tool-use loop, the streamed events, stop reasons, errors, and the onExchange hook. The real
// engine drives the same endpoint in test/serve/anthropic-clients.test.ts.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelInput, SampledSequence } from '../../src/backends/types.js';
import { getTokenizer, type Tokenizer } from '../../src/cookbook/tokenizer.js';
import type { ServedExchange } from '../../src/serve/exchange.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import type { ServedModel } from '../../src/serve/served-model.js';
import { AGENT_CALL as CALL, promptText, scriptedModel, sequenceOf } from '../support/scripted-agent.js';

let tokenizer: Tokenizer;
let imEnd: number;

const scripted = (script?: (prompt: string) => SampledSequence, opts: { maxContextLength?: number } = {}) => scriptedModel(tokenizer, script, opts);
const text = (p: ModelInput) => promptText(tokenizer, p);
const seq = (body: string, extra: number[] = [], stop_reason: 'stop' | 'length' = 'stop') => sequenceOf(tokenizer, body, extra, stop_reason);

const servers: RunningServer[] = [];
async function serve(model: ServedModel, extra: { apiKey?: string; onExchange?: (e: ServedExchange) => void } = {}) {
  const s = await startServer({ model, defaultMaxTokens: 64, ...extra });
  servers.push(s);
  return { server: s, client: new Anthropic({ baseURL: s.url.replace(/\/v1$/, ''), apiKey: extra.apiKey ?? 'unused', maxRetries: 0 }) };
}

beforeAll(async () => {
  tokenizer = await getTokenizer('tiny-qwen3');
  imEnd = tokenizer.tokenToId('<|im_end|>');
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

const weatherTool: Anthropic.Tool = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

describe('POST /v1/messages: what the model wrote, as content blocks', () => {
  it('a tool-use loop: tool_use parsed with its input, the tool_result rendered back in the family format, the loop ends with end_turn', async () => {
    const { model, calls } = scripted();
    const { client } = await serve(model);
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.messages.create({ model: model.id, max_tokens: 64, system: 'You are terse.', messages, tools: [weatherTool] });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content.map((b) => b.type)).toEqual(['thinking', 'tool_use']);
    expect(first.content[0]).toMatchObject({ type: 'thinking', thinking: 'The user wants weather.' });
    const use = first.content[1] as Anthropic.ToolUseBlock;
    expect(use).toMatchObject({ name: 'get_weather', input: { city: 'Paris' } });
    expect(use.id).toMatch(/^toolu_/);
    expect(first.id).toMatch(/^msg_/);
    // The prompt declared the tool in Qwen3's format, under the system prompt.
    expect(text(calls[0].prompt)).toMatch(/^<\|im_start\|>system\nYou are terse\.\n\n# Tools[\s\S]*"name": "get_weather"/);

    messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] });
    const second = await client.messages.create({ model: model.id, max_tokens: 64, system: 'You are terse.', messages, tools: [weatherTool] });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content).toEqual([{ type: 'text', text: 'It is sunny in Paris.' }]);
    const prompt = text(calls[1].prompt);
    expect(prompt).toContain('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>');
    expect(prompt).toContain('<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
    const promptTokens = calls[1].prompt.chunks.reduce((n, c) => n + (c.type === 'encoded_text' ? c.tokens.length : 0), 0);
    expect(second.usage).toMatchObject({ input_tokens: promptTokens, output_tokens: seq('<think>\n\n</think>\n\nIt is sunny in Paris.', [imEnd]).tokens.length });
  });

  it('the same conversation through the OpenAI endpoint renders the same prompt', async () => {
    const { model, calls } = scripted();
    const { server, client } = await serve(model);
    await client.messages.create({
      model: model.id,
      max_tokens: 8,
      system: [{ type: 'text', text: 'You are terse.' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'Look it up.', signature: '' }, { type: 'tool_use', id: 't1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'sunny' }] }, { type: 'text', text: 'And tomorrow?' }] },
      ],
      tools: [weatherTool],
    });
    await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({
        model: model.id,
        max_tokens: 8,
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: '', reasoning_content: 'Look it up.', tool_calls: [{ id: 't1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
          { role: 'tool', tool_call_id: 't1', content: 'sunny' },
          { role: 'user', content: 'And tomorrow?' },
        ],
        tools: [{ type: 'function', function: { name: weatherTool.name, description: weatherTool.description, parameters: weatherTool.input_schema } }],
      }),
    });
    expect(calls).toHaveLength(2);
    expect(text(calls[0].prompt)).toBe(text(calls[1].prompt));
    expect(text(calls[0].prompt)).toContain('<tool_response>\nsunny\n</tool_response><|im_end|>\n<|im_start|>user\nAnd tomorrow?<|im_end|>');
  });

  it('streaming: the SDK assembles the same message from message_start … message_stop, thinking and input_json deltas included', async () => {
    const { model } = scripted();
    const { server, client } = await serve(model);
    const params = { model: model.id, max_tokens: 64, messages: [{ role: 'user' as const, content: 'Weather in Paris?' }], tools: [weatherTool] };
    const whole = await client.messages.create(params);
    const stream = client.messages.stream(params);
    const events: string[] = [];
    stream.on('streamEvent', (e) => events.push(e.type === 'content_block_delta' ? `delta:${e.delta.type}` : e.type));
    const streamed = await stream.finalMessage();
    // (The stream helper adds fields of its own, parsed_output and stop_details; ids are new per request.)
    const noIds = (m: Anthropic.Message) => ({ ...m, id: '', content: m.content.map((b) => (b.type === 'tool_use' ? { ...b, id: '' } : b)) });
    expect(noIds(streamed)).toMatchObject(noIds(whole));
    expect(streamed.content.map((b) => b.type)).toEqual(['thinking', 'tool_use']);
    expect(events).toEqual([
      'message_start',
      'content_block_start',
      'delta:thinking_delta',
      'delta:signature_delta',
      'content_block_stop',
      'content_block_start',
      'delta:input_json_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    // On the wire: named events, a ping after message_start.
    const raw = await (await fetch(`${server.url}/messages`, { method: 'POST', body: JSON.stringify({ ...params, stream: true }) })).text();
    expect(raw.split('\n\n').filter(Boolean).slice(0, 2).map((e) => e.split('\n')[0])).toEqual(['event: message_start', 'event: ping']);
  });

  it('stop_sequences: the text ends before the stop, stop_reason stop_sequence names it; max_tokens ends with max_tokens', async () => {
    const { model, calls } = scripted((prompt) => (prompt.includes('long') ? seq('<think>\n\n</think>\n\nand on and on', [], 'length') : seq('<think>\n\n</think>\n\nalpha beta|END| gamma')));
    const { client } = await serve(model);
    // temperature, top_p and top_k are the API's (the SDK's types have dropped them; its requests carry what they are given).
    const sampling = { temperature: 0.5, top_p: 0.9, top_k: 5 };
    const cut = await client.messages.create({ model: model.id, max_tokens: 32, ...sampling, stop_sequences: ['ND|', 'zzz'], messages: [{ role: 'user', content: 'Go.' }] });
    expect(cut).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'ND|', content: [{ type: 'text', text: 'alpha beta|E' }] });
    expect(calls[0].params).toMatchObject({ max_tokens: 32, temperature: 0.5, top_p: 0.9, top_k: 5, stop: ['ND|', 'zzz', '<|im_end|>'] });
    const long = await client.messages.create({ model: model.id, max_tokens: 5, messages: [{ role: 'user', content: 'Go long.' }] });
    expect(long.stop_reason).toBe('max_tokens');
    expect(long.stop_sequence).toBeNull();
  });

  it('tool_choice none: no tools declared and a call the model writes anyway comes back as no tool_use', async () => {
    const { model, calls } = scripted(() => seq(CALL, [imEnd]));
    const { client } = await serve(model);
    const r = await client.messages.create({ model: model.id, max_tokens: 64, messages: [{ role: 'user', content: 'Weather?' }], tools: [weatherTool], tool_choice: { type: 'none' } });
    expect(r.stop_reason).toBe('end_turn');
    expect(r.content.some((b) => b.type === 'tool_use')).toBe(false);
    expect(text(calls[0].prompt)).not.toContain('# Tools');
  });

  it('system turns inside messages join the system prompt; redacted_thinking is dropped; an image for a text-only model is refused by its place', async () => {
    const { model, calls } = scripted();
    const { client } = await serve(model);
    await client.messages.create({
      model: model.id,
      max_tokens: 8,
      system: 'First.',
      messages: [
        { role: 'system', content: 'Second.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'opaque' }, { type: 'text', text: 'Hello.' }] },
        { role: 'user', content: 'Bye' },
      ] as Anthropic.MessageParam[],
    });
    expect(text(calls[0].prompt)).toMatch(/^<\|im_start\|>system\nFirst\.\n\nSecond\.<\|im_end\|>\n<\|im_start\|>user\nHi<\|im_end\|>\n<\|im_start\|>assistant\n(<think>\n\n<\/think>\n\n)?Hello\.<\|im_end\|>/);
    expect(text(calls[0].prompt)).not.toContain('opaque');
    const image = await client.messages
      .create({ model: model.id, max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is it?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] })
      .then(() => undefined, (e: InstanceType<typeof Anthropic.APIError>) => e);
    expect(image).toBeInstanceOf(Anthropic.BadRequestError);
    expect(image!.message).toContain('messages.0.content.1');
    expect(image!.message).toContain('text only');
    expect(calls).toHaveLength(1);
  });

  it('count_tokens is the rendered prompt’s length', async () => {
    const { model, calls } = scripted();
    const { client } = await serve(model);
    const params = { model: model.id, messages: [{ role: 'user' as const, content: 'Weather in Paris?' }], tools: [weatherTool] };
    const counted = await client.messages.countTokens(params);
    const sent = await client.messages.create({ ...params, max_tokens: 4 });
    expect(counted.input_tokens).toBe(sent.usage.input_tokens);
    expect(calls).toHaveLength(1);
  });
});

describe('POST /v1/messages: errors and the exchange hook', () => {
  it('errors come in the Anthropic shape with the status its SDK maps to exception classes', async () => {
    const { model, calls } = scripted(() => seq('x', [imEnd]), { maxContextLength: 40 });
    const { server, client } = await serve(model, { apiKey: 'sk-ant-test' });
    const fails = (p: Promise<unknown>) => p.then(() => undefined, (e) => e as InstanceType<typeof Anthropic.APIError>);
    const user = [{ role: 'user' as const, content: 'Hi' }];
    const unknown = await fails(client.messages.create({ model: 'claude-nonexistent', max_tokens: 4, messages: user }));
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect(unknown!.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(unknown!.message).toContain('scripted-qwen3');
    const noMax = await fails(client.messages.create({ model: model.id, messages: user } as never));
    expect(noMax).toBeInstanceOf(Anthropic.BadRequestError);
    expect(noMax!.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
    const hot = await fails(client.messages.create({ model: model.id, max_tokens: 4, messages: user, ...{ temperature: 1.5 } }));
    expect(hot!.status).toBe(400);
    expect(hot!.message).toContain('temperature');
    const structured = await fails(client.messages.create({ model: model.id, max_tokens: 4, messages: user, output_config: { format: { type: 'json_schema', schema: { type: 'object' } } } }));
    expect(structured!.message).toContain('output_config.format');
    const forced = await fails(client.messages.create({ model: model.id, max_tokens: 4, messages: user, tools: [weatherTool], tool_choice: { type: 'any' } }));
    expect(forced!.message).toContain('tool_choice');
    const doc = await fails(client.messages.create({ model: model.id, max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] }));
    expect(doc!.message).toContain('messages.0.content.0');
    const long = await fails(client.messages.create({ model: model.id, max_tokens: 4, messages: [{ role: 'user', content: 'word '.repeat(60) }] }));
    expect(long).toBeInstanceOf(Anthropic.BadRequestError);
    expect(long!.message).toMatch(/prompt is too long/);
    const wrongKey = await fails(new Anthropic({ baseURL: server.url.replace(/\/v1$/, ''), apiKey: 'wrong', maxRetries: 0 }).messages.create({ model: model.id, max_tokens: 4, messages: user }));
    expect(wrongKey).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(wrongKey!.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect(calls).toHaveLength(0);
    // x-api-key and Bearer both authenticate, on both APIs.
    const ok = await client.messages.create({ model: model.id, max_tokens: 4, messages: user });
    expect(ok.stop_reason).toBe('end_turn');
    const models = await fetch(`${server.url}/models`, { headers: { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' } });
    expect(((await models.json()) as { data: Array<{ id: string; type: string }> }).data[0]).toMatchObject({ id: model.id, type: 'model', object: 'model' });
    const malformed = await fetch(`${server.url}/messages`, { method: 'POST', headers: { authorization: 'Bearer sk-ant-test' }, body: '{"model": ' });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { type: string }).type).toBe('error');
  });

  it('a sampler failure after the stream opened ends it with an error event the SDK raises', async () => {
    const { model } = scripted(() => {
      throw new Error('backend fell over');
    });
    const { client } = await serve(model);
    const stream = client.messages.stream({ model: model.id, max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }] });
    const err = await stream.finalMessage().then(() => undefined, (e: Error) => e);
    expect(err?.message).toContain('backend fell over');
  });

  it('onExchange gets each exchange of both APIs with its rendered prompt, sampled tokens and logprobs', async () => {
    const { model } = scripted();
    const exchanges: ServedExchange[] = [];
    const { server, client } = await serve(model, { onExchange: (e) => exchanges.push(e) });
    const message = await client.messages.create({ model: model.id, max_tokens: 64, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [weatherTool] });
    await fetch(`${server.url}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: model.id, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 }) });
    await client.messages.create({ model: 'nope', max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }] }).catch(() => undefined);
    expect(exchanges.map((e) => e.api)).toEqual(['anthropic.messages', 'openai.chat.completions']);
    const [a] = exchanges;
    expect(a.response).toEqual(message);
    expect(a.samples).toHaveLength(1);
    expect(text(a.samples[0].prompt)).toContain('Weather in Paris?');
    expect(a.samples[0].sequences[0].tokens).toEqual(seq(CALL, [imEnd]).tokens);
    expect(a.samples[0].sequences[0].logprobs).toHaveLength(a.samples[0].sequences[0].tokens.length);
    expect(a.samples[0].params.max_tokens).toBe(64);
    // The headers come along (a session header, say), the SDK's key does not.
    expect(a.headers['anthropic-version']).toBeDefined();
    expect(a.headers['x-api-key']).toBeUndefined();
  });
});
