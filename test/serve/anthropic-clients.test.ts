// POST /v1/messages on `cookbook serve` as a user runs it (the CLI in its own process) over the real
// engine and the tiny seeded Qwen3 model with its real tokenizer, driven by the official Anthropic
// SDKs: @anthropic-ai/sdk here and the `anthropic` Python package (anthropic_client_check.py).
// Checks are against what does not come from this endpoint: Qwen3's own chat template for the
// prompt, the OpenAI endpoint's greedy answer to the same conversation, and the two SDKs' answers
// to each other. The random tiny model writes no tool call (a LoRA taught one takes minutes: that
// is anthropic-tool-loop.full.test.ts), so the tool-use loop runs twice here: on the real engine, where the
// tool declaration and the tool_result sent back must render as Qwen3's chat template renders
// them, and on a server in this process over a scripted sampler that writes the call
// (test/support/scripted-agent.ts), where the loop must go tool_use → tool_result → end_turn.
import Anthropic from '@anthropic-ai/sdk';
import { execFile, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getTokenizer, type Tokenizer } from '../../src/cookbook/tokenizer.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import { ensureAnthropicPythonEnv } from '../support/python-tools.js';
import { AGENT_ANSWER, scriptedModel } from '../support/scripted-agent.js';
import { serveBackend, startServe, stopServe } from '../support/serve.js';

const execFileAsync = promisify(execFile);
const MODEL = 'tiny-qwen3';
const KEY = 'sk-ant-serve-test';

let backendHandle: Awaited<ReturnType<typeof serveBackend>> | undefined;
let tokenizer: Tokenizer;
let server: ChildProcess;
let baseURL: string;
let client: Anthropic;
let scripted: RunningServer;
let scriptedClient: Anthropic;

const sdkBase = (url: string) => url.replace(/\/v1$/, '');
const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Name a colour.' }];
const SYSTEM = 'You are terse.';
const weatherTool: Anthropic.Tool = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

/** An agent's loop: ask, run each tool_use the model makes, send the results back, until it stops calling tools. */
async function toolLoop(c: Anthropic, model: string, maxTokens: number, maxTurns = 3): Promise<{ turns: Anthropic.Message[]; history: Anthropic.MessageParam[] }> {
  const history: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
  const turns: Anthropic.Message[] = [];
  for (let turn = 0; turn < maxTurns; turn++) {
    const r = await c.messages.create({ model, max_tokens: maxTokens, system: SYSTEM, messages: history, tools: [weatherTool], ...{ temperature: 0 } });
    turns.push(r);
    history.push({ role: 'assistant', content: r.content });
    if (r.stop_reason !== 'tool_use') break;
    const results = r.content.filter((b) => b.type === 'tool_use').map((b): Anthropic.ToolResultBlockParam => ({ type: 'tool_result', tool_use_id: b.id, content: b.name === 'get_weather' ? 'sunny' : 'unknown tool' }));
    history.push({ role: 'user', content: results });
  }
  return { turns, history };
}

beforeAll(async () => {
  backendHandle = await serveBackend();
  tokenizer = await getTokenizer(MODEL);
  const started = await startServe(backendHandle.engineUrl, [MODEL, '--api-key', KEY]);
  server = started.child;
  baseURL = started.url;
  client = new Anthropic({ baseURL: sdkBase(baseURL), apiKey: KEY, maxRetries: 0 });
  scripted = await startServer({ model: scriptedModel(tokenizer).model, defaultMaxTokens: 64, apiKey: KEY });
  scriptedClient = new Anthropic({ baseURL: sdkBase(scripted.url), apiKey: KEY, maxRetries: 0 });
}, 600_000);

afterAll(async () => {
  await stopServe(server);
  await scripted?.close();
  await backendHandle?.stop();
});

describe('cookbook serve with @anthropic-ai/sdk', () => {
  it('a plain message: the prompt is Qwen3’s chat template, the greedy answer is the OpenAI endpoint’s', async () => {
    const r = await client.messages.create({ model: MODEL, max_tokens: 8, system: SYSTEM, messages, ...{ temperature: 0 } });
    const template = tokenizer.applyChatTemplate([{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Name a colour.' }] as never, { addGenerationPrompt: true });
    expect(r.usage.input_tokens).toBe(template.length);
    expect(r.usage.output_tokens).toBeGreaterThan(0);
    expect(r.usage.output_tokens).toBeLessThanOrEqual(8);
    expect(r).toMatchObject({ type: 'message', role: 'assistant', model: MODEL });
    expect(['end_turn', 'max_tokens']).toContain(r.stop_reason);
    const openai = await new OpenAI({ baseURL, apiKey: KEY, maxRetries: 0 }).chat.completions.create({ model: MODEL, max_tokens: 8, temperature: 0, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Name a colour.' }] });
    const o = openai.choices[0];
    const text = r.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    expect(text).toBe(o.message.content ?? '');
    const thinking = r.content.find((b) => b.type === 'thinking');
    expect(thinking?.thinking).toBe((o.message as { reasoning_content?: string }).reasoning_content);
    expect(r.stop_reason).toBe(o.finish_reason === 'length' ? 'max_tokens' : 'end_turn');
    expect(r.usage.output_tokens).toBe(openai.usage!.completion_tokens);
  });

  it('streaming: the SDK’s stream helper assembles the unstreamed message', async () => {
    const params = { model: MODEL, max_tokens: 12, system: SYSTEM, messages, ...{ temperature: 0 } };
    const whole = await client.messages.create(params);
    const stream = client.messages.stream(params);
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const streamed = await stream.finalMessage();
    expect(streamed.content).toEqual(whole.content);
    expect(streamed.usage).toEqual(whole.usage);
    expect(streamed.stop_reason).toBe(whole.stop_reason);
    expect(types[0]).toBe('message_start');
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
  });

  it('stop_sequences: the engine stops there, the text ends before it and stop_reason names it', async () => {
    const long = await client.messages.create({ model: MODEL, max_tokens: 24, messages, ...{ temperature: 0 } });
    const text = long.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const chars = [...text];
    expect(chars.length).toBeGreaterThan(8);
    const stop = chars.slice(4, 7).join('');
    const cut = await client.messages.create({ model: MODEL, max_tokens: 24, messages, stop_sequences: [stop], ...{ temperature: 0 } });
    expect(cut).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: stop });
    expect(cut.content.filter((b) => b.type === 'text').map((b) => b.text).join('')).toBe(text.slice(0, text.indexOf(stop)));
    expect(cut.usage.output_tokens).toBeLessThan(long.usage.output_tokens);
  });

  it('a tool-use loop on the real engine: the tools and the tool_result sent back render as Qwen3’s chat template renders them', async () => {
    // The random model answers in text, so the loop is given the turn an agent model would have written.
    const history: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
    ];
    const r = await client.messages.create({ model: MODEL, max_tokens: 8, system: SYSTEM, messages: history, tools: [weatherTool], ...{ temperature: 0 } });
    const template = tokenizer.applyChatTemplate(
      [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
        { role: 'tool', content: 'sunny' },
      ] as never,
      { addGenerationPrompt: true, tools: [{ type: 'function', function: { name: weatherTool.name, description: weatherTool.description, parameters: weatherTool.input_schema } }] as never },
    );
    expect(r.usage.input_tokens).toBe(template.length);
    expect((await client.messages.countTokens({ model: MODEL, system: SYSTEM, messages: history, tools: [weatherTool] })).input_tokens).toBe(template.length);
    // The loop itself on the engine: it runs, and ends as soon as the model answers without a call.
    const { turns } = await toolLoop(client, MODEL, 12);
    expect(turns.at(-1)!.stop_reason).not.toBe('tool_use');
  });

  it('a tool-use loop where the model calls the tool (scripted sampler): tool_use with its input, the result back, end_turn', async () => {
    const { turns, history } = await toolLoop(scriptedClient, 'scripted-qwen3', 48);
    expect(turns.map((t) => t.stop_reason)).toEqual(['tool_use', 'end_turn']);
    expect(turns[0].content).toEqual([
      { type: 'thinking', thinking: 'The user wants weather.', signature: '' },
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'get_weather', input: { city: 'Paris' } },
    ]);
    expect(turns[1].content).toEqual([{ type: 'text', text: AGENT_ANSWER }]);
    expect(history).toHaveLength(4);
    // The same first turn streamed: the call arrives as an input_json_delta and assembles to the same block.
    const stream = scriptedClient.messages.stream({ model: 'scripted-qwen3', max_tokens: 48, messages: [history[0]], tools: [weatherTool] });
    const deltas: string[] = [];
    stream.on('streamEvent', (e) => e.type === 'content_block_delta' && deltas.push(e.delta.type));
    const streamed = await stream.finalMessage();
    expect(deltas).toEqual(['thinking_delta', 'signature_delta', 'input_json_delta']);
    expect(streamed.content[1]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
  });

  it('errors come in the Anthropic shape with the status its SDK maps to exception classes, and the server carries on', async () => {
    const fails = (p: Promise<unknown>) => p.then(() => undefined, (e) => e as InstanceType<typeof Anthropic.APIError>);
    const unknown = await fails(client.messages.create({ model: 'claude-nonexistent', max_tokens: 4, messages }));
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect(unknown!.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const noMax = await fails(client.messages.create({ model: MODEL, messages } as never));
    expect(noMax).toBeInstanceOf(Anthropic.BadRequestError);
    expect(noMax!.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
    const noTools = await fails(client.messages.create({ model: MODEL, max_tokens: 4, messages, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }));
    expect(noTools!.message).toContain('web_search_20250305');
    const wrongKey = await fails(new Anthropic({ baseURL: sdkBase(baseURL), apiKey: 'wrong', maxRetries: 0 }).messages.create({ model: MODEL, max_tokens: 4, messages }));
    expect(wrongKey).toBeInstanceOf(Anthropic.AuthenticationError);
    const after = await client.messages.create({ model: MODEL, max_tokens: 2, messages });
    expect(after.content.length).toBeGreaterThan(0);
    // GET /v1/models answers both SDKs.
    const listed = await client.models.list();
    expect(listed.data.map((m) => m.id)).toEqual([MODEL]);
  });
});

describe('cookbook serve with the anthropic Python SDK', () => {
  it('plain, streaming, the tool-use loop and errors, matching the npm SDK', async () => {
    const { python } = await ensureAnthropicPythonEnv();
    // Not spawnSync: the scripted server lives in this process and must answer meanwhile.
    const run = await execFileAsync(python, [join(import.meta.dirname, 'anthropic_client_check.py'), sdkBase(baseURL), MODEL, sdkBase(scripted.url), 'scripted-qwen3', KEY], { encoding: 'utf8', timeout: 120_000 });
    expect(run.stderr).toBe('');
    // The Python SDK's models list every optional field, as null: compared without them.
    const py = JSON.parse(run.stdout, (_key, value) => (value === null ? undefined : value));
    const npm = await client.messages.create({ model: MODEL, max_tokens: 8, system: SYSTEM, messages, ...{ temperature: 0 } });
    expect(py.plain.content).toEqual(npm.content);
    expect(py.plain.usage).toMatchObject(npm.usage);
    expect(py.plain.stop_reason).toBe(npm.stop_reason);
    expect(py.streamed.content).toEqual(npm.content);
    expect(py.stream_events[0]).toBe('message_start');
    expect(py.loop.map((m: Anthropic.Message) => m.stop_reason)).toEqual(['tool_use', 'end_turn']);
    expect(py.loop[0].content[1]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    expect(py.loop[1].content).toEqual([{ type: 'text', text: AGENT_ANSWER }]);
    expect(py.errors.unknown_model).toMatchObject({ class: 'NotFoundError', status: 404, type: 'not_found_error' });
    expect(py.errors.bad_temperature).toMatchObject({ class: 'BadRequestError', status: 400, type: 'invalid_request_error' });
    expect(py.errors.wrong_key).toMatchObject({ class: 'AuthenticationError', status: 401, type: 'authentication_error' });
  });
});
