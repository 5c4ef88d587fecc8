// `cookbook serve` and `cookbook chat` as a user runs them (the CLI in its own process) over the real
// engine and the tiny seeded Qwen3 model with its real tokenizer, driven by the official OpenAI
// clients: the npm package here and the Python package (test/serve/openai_client_check.py). Checks
// are against what does not come from the server: Qwen3's own chat template for the prompt, the
// engine's logprobs through the project's Tinker client, and the two clients' answers to each other.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend, type TinkerBackend } from '../../src/backends/tinker-backend.js';
import { getTokenizer, type Tokenizer } from '../../src/cookbook/tokenizer.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import { conversationToDatum } from '../../src/cookbook/supervised/datum.js';
import { serveBackend, startServe, stopServe } from '../support/serve.js';
import { ensureOpenAIPythonEnv } from '../support/python-tools.js';

const MODEL = 'tiny-qwen3';
const KEY = 'sk-serve-test';
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'cookbook.mjs');

let backendHandle: Awaited<ReturnType<typeof serveBackend>> | undefined;
let engineUrl: string;
let server: ChildProcess;
let baseURL: string;
let client: OpenAI;
let backend: TinkerBackend;
let tokenizer: Tokenizer;


const messages: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Name a colour.' },
];

beforeAll(async () => {
  backendHandle = await serveBackend();
  engineUrl = backendHandle.engineUrl;
  tokenizer = await getTokenizer(MODEL);
  backend = createTinkerBackend({ baseUrl: engineUrl, apiKey: 'tml-serve-test', env: {} });
  const started = await startServe(engineUrl, [MODEL, '--api-key', KEY]);
  server = started.child;
  baseURL = started.url;
  client = new OpenAI({ baseURL, apiKey: KEY, maxRetries: 0 });
}, 600_000);

afterAll(async () => {
  await stopServe(server);
  await backend?.close();
  await backendHandle?.stop();
});

describe('cookbook serve with the npm openai client', () => {
  it('lists the served model', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
  });

  it('renders the prompt as Qwen3’s own chat template does, and counts usage by tokens', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 6, temperature: 0 });
    const template = tokenizer.applyChatTemplate(messages as never, { addGenerationPrompt: true });
    expect(r.usage!.prompt_tokens).toBe(template.length);
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
    expect(r.usage!.completion_tokens).toBeLessThanOrEqual(6);
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + r.usage!.completion_tokens);
    expect(r.object).toBe('chat.completion');
    expect(r.choices[0].message.role).toBe('assistant');
  });

  it('declares tools in the Qwen3 format: the prompt equals the chat template given the same tools', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    ];
    const r = await client.chat.completions.create({ model: MODEL, messages, tools, max_tokens: 2, temperature: 0 });
    const template = tokenizer.applyChatTemplate(messages as never, { addGenerationPrompt: true, tools: tools as never });
    expect(r.usage!.prompt_tokens).toBe(template.length);
  });

  it('n samples with a seed: distinct, reproducible, with logprobs and top_logprobs that agree with each other', async () => {
    const ask = () => client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 1, seed: 7, n: 2, logprobs: true, top_logprobs: 3 });
    const [a, b] = await Promise.all([ask(), ask()]);
    expect(a.choices).toHaveLength(2);
    expect(a.choices.map((c) => c.message.content)).toEqual(b.choices.map((c) => c.message.content));
    expect(a.choices[0].message.content).not.toBe(a.choices[1].message.content);
    let counted = 0;
    for (const c of a.choices) {
      const content = c.logprobs!.content!;
      counted += content.length + (c.finish_reason === 'stop' ? 1 : 0); // the stop token carries no text
      for (const t of content) {
        expect(t.top_logprobs).toHaveLength(3);
        const tops = t.top_logprobs.map((x) => x.logprob);
        expect(tops).toEqual([...tops].sort((x, y) => y - x));
        expect(t.logprob).toBeLessThanOrEqual(tops[0] + 1e-4);
        expect(t.logprob).toBeLessThan(0);
      }
    }
    expect(counted).toBe(a.usage!.completion_tokens);
  });

  it('greedy logprobs: the sampled token is the top alternative', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 1 });
    for (const t of r.choices[0].logprobs!.content!) expect(t.top_logprobs[0].token).toBe(t.token);
  });

  it('streams over SSE: the deltas add up to the unstreamed answer, then finish_reason and usage', async () => {
    const params = { model: MODEL, messages, max_tokens: 10, temperature: 1, seed: 3 } as const;
    const whole = await client.chat.completions.create(params);
    const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    let text = '';
    const finishes: string[] = [];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text += c.delta.content ?? '';
        if (c.finish_reason) finishes.push(c.finish_reason);
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(whole.choices[0].message.content);
    expect(finishes).toEqual([whole.choices[0].finish_reason]);
    expect(usage).toEqual(whole.usage);
  });

  it('stop strings: the engine stops there and the text ends before the stop', async () => {
    const long = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 24, temperature: 0 });
    const text = long.choices[0].message.content!;
    const chars = [...text];
    expect(chars.length).toBeGreaterThan(8);
    const stop = chars.slice(4, 7).join('');
    const cut = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 24, temperature: 0, stop: [stop] });
    expect(cut.choices[0].message.content).toBe(text.slice(0, text.indexOf(stop)));
    expect(cut.choices[0].finish_reason).toBe('stop');
    expect(cut.usage!.completion_tokens).toBeLessThan(long.usage!.completion_tokens);
  });

  it('/v1/completions: raw text, logprobs, and echo with the engine’s own prompt logprobs', async () => {
    const prompt = 'Once upon a time';
    const r = await client.completions.create({ model: MODEL, prompt, max_tokens: 6, temperature: 0, logprobs: 2 });
    const c = r.choices[0];
    const kept = r.usage!.completion_tokens - (c.finish_reason === 'stop' ? 1 : 0); // an end-of-text token is no text
    expect(c.logprobs!.token_logprobs).toHaveLength(kept);
    expect(c.logprobs!.tokens).toHaveLength(kept);
    expect(c.logprobs!.top_logprobs!.every((row) => Object.keys(row).length >= 1)).toBe(true);
    const ids = tokenizer.encode(prompt, { addSpecialTokens: false });
    expect(r.usage!.prompt_tokens).toBe(ids.length);

    const scored = await client.completions.create({ model: MODEL, prompt, max_tokens: 0, echo: true, logprobs: 1, temperature: 0 });
    const s = scored.choices[0];
    expect(s.text).toBe(prompt);
    const sampler = await backend.createSamplingSession({ baseModel: MODEL });
    const engineLps = await sampler.computeLogprobs({ chunks: [{ type: 'encoded_text', tokens: ids }] });
    expect(s.logprobs!.token_logprobs![0]).toBeNull();
    s.logprobs!.token_logprobs!.slice(1).forEach((lp, i) => expect(lp).toBeCloseTo(engineLps[i + 1]!, 4));
    expect(scored.usage!.completion_tokens).toBe(0);
  });

  it('concurrent requests each get their own answer (the same as asked alone)', async () => {
    const ask = (seed: number) => client.chat.completions.create({ model: MODEL, messages, max_tokens: 6, temperature: 1, seed });
    const alone = [];
    for (const seed of [1, 2, 3, 4]) alone.push((await ask(seed)).choices[0].message.content);
    const together = await Promise.all([1, 2, 3, 4].map(async (seed) => (await ask(seed)).choices[0].message.content));
    expect(together).toEqual(alone);
  });

  it('errors come in the OpenAI shape with the status its clients expect, and the server carries on', async () => {
    const fails = async (p: Promise<unknown>) => p.then(() => undefined, (e) => e as InstanceType<typeof OpenAI.APIError>);
    const unknown = await fails(client.chat.completions.create({ model: 'no-such-model', messages }));
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
    const badN = await fails(client.chat.completions.create({ model: MODEL, messages, n: 0 }));
    expect(badN).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badN).toMatchObject({ status: 400, param: 'n' });
    const noLogprobs = await fails(client.chat.completions.create({ model: MODEL, messages, top_logprobs: 2 }));
    expect(noLogprobs).toMatchObject({ status: 400, param: 'top_logprobs' });
    const badMessage = await fails(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] }] }));
    expect(badMessage).toMatchObject({ status: 400, code: 'unsupported_parameter' });
    const wrongKey = await fails(new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 }).models.list());
    expect(wrongKey).toBeInstanceOf(OpenAI.AuthenticationError);

    const raw = await fetch(`${baseURL}/chat/completions`, { method: 'POST', headers: { Authorization: `Bearer ${KEY}` }, body: '{"model": ' });
    expect(raw.status).toBe(400);
    const body = (await raw.json()) as { error: Record<string, unknown> };
    expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect(body.error.type).toBe('invalid_request_error');

    const after = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
    expect(after.choices).toHaveLength(1);
  });
});

describe('cookbook serve with the Python openai client', () => {
  it('chat (n, logprobs, top_logprobs), streaming, completions and errors, matching the npm client', async () => {
    const { python } = await ensureOpenAIPythonEnv();
    const run = spawnSync(python, [join(import.meta.dirname, 'openai_client_check.py'), baseURL, MODEL, KEY], { encoding: 'utf8', timeout: 120_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const py = JSON.parse(run.stdout);
    expect(py.models).toEqual([MODEL]);

    const npm = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 1, seed: 7, n: 2, logprobs: true, top_logprobs: 2 });
    expect(py.chat.choices.map((c: { message: { content: string } }) => c.message.content)).toEqual(npm.choices.map((c) => c.message.content));
    const { prompt_tokens, completion_tokens, total_tokens } = py.chat.usage;
    expect({ prompt_tokens, completion_tokens, total_tokens }).toEqual(npm.usage);
    expect(py.chat.choices[0].logprobs.content[0].top_logprobs).toHaveLength(2);
    const single = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 1, seed: 7 });
    expect(py.stream_text).toBe(single.choices[0].message.content);
    expect(py.stream_finish).toEqual([single.choices[0].finish_reason]);
    expect(py.stream_usage).toHaveLength(1);

    const completion = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, logprobs: 2 });
    expect(py.completion.choices[0].text).toBe(completion.choices[0].text);
    expect(py.completion.choices[0].logprobs.token_logprobs).toEqual(completion.choices[0].logprobs!.token_logprobs);

    expect(py.errors.unknown_model).toMatchObject({ class: 'NotFoundError', status: 404, code: 'model_not_found' });
    expect(py.errors.bad_temperature).toMatchObject({ class: 'BadRequestError', status: 400, param: 'temperature' });
    expect(py.errors.wrong_key).toMatchObject({ class: 'AuthenticationError', status: 401 });
  });
});

describe('cookbook chat', () => {
  it('piped stdin: one turn per line of one conversation, answers on stdout, equal to the API’s', async () => {
    const lines = ['Hello there.', 'And then?'];
    const run = spawnSync(process.execPath, [BIN, 'chat', MODEL, '--system', 'You are terse.', '--max-tokens', '6', '--temperature', '0'], {
      input: `${lines.join('\n')}\n`,
      encoding: 'utf8',
      env: { ...process.env, TINKER_BASE_URL: engineUrl },
      timeout: 120_000,
    });
    expect(run.status).toBe(0);
    // The same conversation through the server: each answer joins the history of the next turn.
    const history: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'You are terse.' }];
    const answers: string[] = [];
    for (const line of lines) {
      history.push({ role: 'user', content: line });
      const r = await client.chat.completions.create({ model: MODEL, messages: history, max_tokens: 6, temperature: 0 });
      const answer = r.choices[0].message.content ?? '';
      answers.push(answer);
      history.push({ role: 'assistant', content: answer });
    }
    expect(run.stdout).toBe(answers.map((a) => `${a}\n\n`).join(''));
  });
});

describe('cookbook serve of a trained checkpoint', () => {
  it('serves a tinker:// checkpoint: its own weights, the engine’s answer for the rendered prompt', async () => {
    // One training step makes weights of its own; the server finds their base model through the backend.
    const session = await backend.createTrainingSession({ baseModel: MODEL, lora: { rank: 4, seed: 5 } });
    const datum = conversationToDatum([{ role: 'user', content: 'Name a colour.' }, { role: 'assistant', content: 'Blue.' }], getRenderer('qwen3', tokenizer), null, 'last_assistant_message');
    const fb = await session.forwardBackward([datum], 'cross_entropy', { seqId: 1 });
    const opt = await session.optimStep({ learning_rate: 5e-2 }, { seqId: 1 + fb.seqIds });
    await Promise.all([fb.result(), opt.result()]);
    const checkpoint = (await (await session.saveWeightsForSampler('serve-test', { seqId: 2 + fb.seqIds })).result()).path;

    const served = await startServe(engineUrl, [checkpoint]);
    try {
      const trained = new OpenAI({ baseURL: served.url, apiKey: 'unused', maxRetries: 0 });
      expect((await trained.models.list()).data.map((m) => m.id)).toEqual([checkpoint]);
      const ask = (c: OpenAI, model: string) => c.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, logprobs: true });
      const [mine, base] = await Promise.all([ask(trained, checkpoint), ask(client, MODEL)]);
      // The engine itself, sampling the checkpoint on the prompt Qwen3's template renders, answers the same tokens.
      const sampler = await backend.createSamplingSession({ modelPath: checkpoint });
      const prompt = tokenizer.applyChatTemplate(messages as never, { addGenerationPrompt: true });
      const direct = await sampler.sample({ chunks: [{ type: 'encoded_text', tokens: prompt }] }, 1, { max_tokens: 8, temperature: 0, stop: [tokenizer.tokenToId('<|im_end|>')] });
      const lps = mine.choices[0].logprobs!.content!.map((t) => t.logprob);
      direct.sequences[0].logprobs!.slice(0, lps.length).forEach((lp, i) => expect(lps[i]).toBeCloseTo(lp, 4));
      expect(mine.usage!.completion_tokens).toBe(direct.sequences[0].tokens.length);
      // …and not the base model's: the served weights are the checkpoint's.
      expect(lps).not.toEqual(base.choices[0].logprobs!.content!.map((t) => t.logprob));
    } finally {
      await stopServe(served.child);
    }
  });
});
