// The Anthropic tool-use loop with the real engine writing the tool call: the random tiny model
// never calls a tool, so a LoRA checkpoint is taught (test/support/taught-replies.ts) to answer the
// loop's two prompts, exactly as `cookbook serve` renders them, with a Qwen3 tool call and then
// with a text answer. `cookbook serve <checkpoint>` then runs the loop for @anthropic-ai/sdk (plain
// and streamed) and the anthropic Python SDK: the engine samples the call, the server parses it into
// a tool_use block, the SDK sends the tool_result back, the engine answers, the loop ends. Fuller
// tier (a hundred-odd training steps); the gate runs the loop over a scripted sampler
// (test/serve/anthropic-clients.test.ts).
import Anthropic from '@anthropic-ai/sdk';
import { execFile, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend, type TinkerBackend } from '../../src/backends/tinker-backend.js';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import { getTokenizer } from '../../src/cookbook/tokenizer.js';
import { conversationFromAnthropic } from '../../src/serve/anthropic/conversation.js';
import type { MessagesRequest } from '../../src/serve/anthropic/requests.js';
import { ensureAnthropicPythonEnv } from '../support/python-tools.js';
import { serveBackend, startServe, stopServe } from '../support/serve.js';
import { teachReplies } from '../support/taught-replies.js';

const execFileAsync = promisify(execFile);
const MODEL = 'tiny-qwen3';
const KEY = 'sk-ant-tool-loop';
const SYSTEM = 'You are terse.';
const weatherTool: Anthropic.Tool = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
const ASK: Anthropic.MessageParam = { role: 'user', content: 'Weather in Paris?' };
const CALL = '<think>\nI will look it up.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const ANSWER = 'It is sunny in Paris.';

let backendHandle: Awaited<ReturnType<typeof serveBackend>> | undefined;
let backend: TinkerBackend;
let served: ChildProcess | undefined;
let baseURL: string;
let client: Anthropic;
let checkpoint: string;

beforeAll(async () => {
  backendHandle = await serveBackend();
  backend = createTinkerBackend({ baseUrl: backendHandle.engineUrl, apiKey: 'tml-tool-loop', env: {} });
  const tokenizer = await getTokenizer(MODEL);
  const renderer = getRenderer('qwen3', tokenizer);
  // The loop's two prompts as the server renders them (tool_use ids are no part of Qwen3's format).
  const promptOf = (messages: Anthropic.MessageParam[]) =>
    modelInputToInts(renderer.buildGenerationPrompt(conversationFromAnthropic(renderer, { model: MODEL, system: SYSTEM, messages, tools: [weatherTool] } as unknown as MessagesRequest).conversation));
  const imEnd = tokenizer.tokenToId('<|im_end|>');
  const reply = (text: string) => [...tokenizer.encode(text, { addSpecialTokens: false }), imEnd];
  const called: Anthropic.MessageParam[] = [
    ASK,
    { role: 'assistant', content: [{ type: 'thinking', thinking: 'I will look it up.', signature: '' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
  ];
  const taught = await teachReplies(backend, MODEL, [{ prompt: promptOf([ASK]), reply: reply(CALL) }, { prompt: promptOf(called), reply: reply(`<think>\n\n</think>\n\n${ANSWER}`) }], { name: 'anthropic-tool-loop' });
  process.stderr.write(`[tool-loop] replies taught in ${taught.steps} steps (mean NLL ${taught.nll.toFixed(4)})\n`);
  checkpoint = taught.path;
  const started = await startServe(backendHandle.engineUrl, [checkpoint, '--api-key', KEY]);
  served = started.child;
  baseURL = started.url.replace(/\/v1$/, '');
  client = new Anthropic({ baseURL, apiKey: KEY, maxRetries: 0 });
}, 1_200_000);

afterAll(async () => {
  await stopServe(served);
  await backend?.close();
  await backendHandle?.stop();
});

describe('the Anthropic tool-use loop with the engine writing the call', () => {
  it('@anthropic-ai/sdk: tool_use from the engine’s sample, the tool_result back, end_turn; streamed alike', async () => {
    const history: Anthropic.MessageParam[] = [ASK];
    const turns: Anthropic.Message[] = [];
    for (let turn = 0; turn < 4; turn++) {
      const r = await client.messages.create({ model: checkpoint, max_tokens: 64, system: SYSTEM, messages: history, tools: [weatherTool], ...{ temperature: 0 } });
      turns.push(r);
      if (r.stop_reason !== 'tool_use') break;
      history.push({ role: 'assistant', content: r.content });
      const results = r.content.filter((b) => b.type === 'tool_use').map((b): Anthropic.ToolResultBlockParam => ({ type: 'tool_result', tool_use_id: b.id, content: b.name === 'get_weather' ? 'sunny' : 'unknown tool' }));
      history.push({ role: 'user', content: results });
    }
    expect(turns.map((t) => t.stop_reason)).toEqual(['tool_use', 'end_turn']);
    expect(turns[0].content).toEqual([
      { type: 'thinking', thinking: 'I will look it up.', signature: '' },
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'get_weather', input: { city: 'Paris' } },
    ]);
    expect(turns[1].content).toEqual([{ type: 'text', text: ANSWER }]);

    const stream = client.messages.stream({ model: checkpoint, max_tokens: 64, system: SYSTEM, messages: [ASK], tools: [weatherTool], ...{ temperature: 0 } });
    const deltas: string[] = [];
    stream.on('streamEvent', (e) => e.type === 'content_block_delta' && deltas.push(e.delta.type));
    const streamed = await stream.finalMessage();
    expect(deltas).toEqual(['thinking_delta', 'signature_delta', 'input_json_delta']);
    expect(streamed.content[1]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
  });

  it('the anthropic Python SDK runs the same loop', async () => {
    const { python } = await ensureAnthropicPythonEnv();
    const run = await execFileAsync(python, [join(import.meta.dirname, 'anthropic_client_check.py'), baseURL, checkpoint, baseURL, checkpoint, KEY], { encoding: 'utf8', timeout: 120_000 });
    const py = JSON.parse(run.stdout, (_key, value) => (value === null ? undefined : value));
    expect(py.loop.map((m: Anthropic.Message) => m.stop_reason)).toEqual(['tool_use', 'end_turn']);
    expect(py.loop[0].content[1]).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    expect(py.loop[1].content).toEqual([{ type: 'text', text: ANSWER }]);
  });
});
