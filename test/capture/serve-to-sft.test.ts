// Capture's loop end to end on the real stack: an agent session driven through `cookbook serve
// --capture` by the official clients (OpenAI chat with a tool call and its result over two turns,
// and Anthropic Messages exchanges, plain and streamed) lands in a capture store daemon, one row per sample with the
// prompt exactly as the model's own chat template renders it; `cookbook capture export --format
// sft` writes it as a conversations file; `cookbook train sl` trains on it with capture on, and the
// run's recorded training calls show it trained on exactly the captured tokens.
import Anthropic from '@anthropic-ai/sdk';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeDataset } from '../../src/capture/export/dataset.js';
import { sequenceDigest } from '../../src/capture/run-capture.js';
import type { Annotation, JsonValue, WireRow } from '../../src/capture/rows.js';
import { CaptureStoreClient, ensureCaptureStore } from '../../src/capture/store/client.js';
import { readDaemonInfo } from '../../src/capture/store/daemon.js';
import type { Service } from '../../src/cli/services.js';
import { getTokenizer } from '../../src/cookbook/tokenizer.js';
import { cookbookOn, cookbookProcess } from '../support/cli.js';
import { startServe, stopServe } from '../support/serve.js';
import { startTestStack, waitUntil, workerProcess, type TestStack } from '../support/stack.js';

const MODEL = 'tiny-qwen3';
const RUN = 'agent-capture';

describe('serve --capture → capture export --format sft → train sl', { timeout: 600_000 }, () => {
  let stack: TestStack;
  let worker: Service;
  let serve: ChildProcess | undefined;
  let dir: string;
  let store: CaptureStoreClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'h61f-e2e-'));
    stack = await startTestStack();
    worker = await workerProcess(stack);
    store = new CaptureStoreClient(await ensureCaptureStore(join(dir, 'store'), { idleShutdownMinutes: 10 }));
  }, 600_000);

  afterAll(async () => {
    await stopServe(serve);
    await worker?.stop();
    await stack?.stop();
    // The store daemon this file started (detached, as serve and the worker would find it).
    const daemon = dir ? readDaemonInfo(join(dir, 'store')) : null;
    if (daemon) process.kill(daemon.pid, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  it('records the session token for token, exports it, and SL trains on exactly those tokens', async () => {
    const started = await startServe(stack.engine.baseUrl, [MODEL, '--capture', join(dir, 'store'), '--capture-run', RUN]);
    serve = started.child;
    let serveErr = '';
    serve.stderr!.on('data', (d: Buffer) => (serveErr += d.toString()));

    // The agent: a tool declared; turn 2 carries the tool call and its result back.
    const openai = new OpenAI({ baseURL: started.url, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-cookbook-session': 'agent-1' } });
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    ];
    const turn1: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are a weather agent.' },
      { role: 'user', content: 'Weather in Paris?' },
    ];
    const r1 = await openai.chat.completions.create({ model: MODEL, messages: turn1, tools, max_tokens: 8, temperature: 0 });
    const turn2: OpenAI.ChatCompletionMessageParam[] = [
      ...turn1,
      { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny, 21 C' },
    ];
    const r2 = await openai.chat.completions.create({ model: MODEL, messages: turn2, tools, max_tokens: 8, temperature: 0 });
    const anthropic = new Anthropic({ baseURL: started.url.replace(/\/v1$/, ''), apiKey: 'unused', maxRetries: 0 });
    const r3 = await anthropic.messages.create({ model: MODEL, max_tokens: 6, messages: [{ role: 'user', content: 'Say hi.' }], metadata: { user_id: 'agent-2' } });
    const r4 = await anthropic.messages.stream({ model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: 'Stream a word.' }], metadata: { user_id: 'agent-2' } }).finalMessage();

    // Shutting serve down sends what is queued and says what was kept.
    await stopServe(serve);
    expect(serveErr).toMatch(/capture: 4 exchanges \([\d.]+ ms each to record\), 4 rows stored, 0 dropped \(queue full\), 0 failed to send, 0 invalid, 0 unsent/);

    const rows = await store.allRows({ run_id: RUN });
    expect(rows).toHaveLength(4);
    const meta = (r: WireRow) => r.metadata as Record<string, JsonValue>;
    const [a, b, c, d] = rows;
    expect(rows.map((r) => [meta(r).api, meta(r).session_id, r.purpose, r.policy_version])).toEqual([
      ['openai.chat.completions', 'agent-1', 'serve', MODEL],
      ['openai.chat.completions', 'agent-1', 'serve', MODEL],
      ['anthropic.messages', 'agent-2', 'serve', MODEL],
      ['anthropic.messages', 'agent-2', 'serve', MODEL],
    ]);
    // The prompt is what Qwen3's own chat template makes of the request, and usage counted these tokens.
    const tokenizer = await getTokenizer(MODEL);
    expect(a.prompt_tokens).toEqual(tokenizer.applyChatTemplate(turn1 as never, { addGenerationPrompt: true, tools: tools as never }));
    expect([a.prompt_tokens!.length, a.sampled_tokens!.length]).toEqual([r1.usage!.prompt_tokens, r1.usage!.completion_tokens]);
    expect([b.prompt_tokens!.length, b.sampled_tokens!.length]).toEqual([r2.usage!.prompt_tokens, r2.usage!.completion_tokens]);
    expect([c.prompt_tokens!.length, c.sampled_tokens!.length]).toEqual([r3.usage.input_tokens, r3.usage.output_tokens]);
    expect([d.prompt_tokens!.length, d.sampled_tokens!.length]).toEqual([r4.usage.input_tokens, r4.usage.output_tokens]);
    for (const r of rows) expect(r.logprobs).toHaveLength(r.sampled_tokens!.length);
    expect(meta(a).prompt_text).toBe(tokenizer.decode(a.prompt_tokens!));
    expect(meta(b).tool_use).toBe(true); // the conversation carries a call and its result
    expect((meta(b).messages as Array<{ role: string }>).map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect((meta(a).response as { id: string }).id).toBe(r1.id);
    expect((meta(c).response as { id: string }).id).toBe(r3.id);
    expect((meta(d).response as { id: string }).id).toBe(r4.id); // the stream's message, assembled

    // Export: every session as token records; --tool-use keeps only the exchange that used tools.
    const out = join(dir, 'agent_sft.jsonl');
    const exported = await cookbookProcess(['capture', 'export', '--format', 'sft', '--out', out, '--data-dir', join(dir, 'store'), '--run', RUN]).done;
    expect(exported.code, exported.err).toBe(0);
    expect(exported.out).toContain('4 sft records from 4 rows');
    const records = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { tokens: number[]; weights: number[] });
    // Turn 2's history is the client's scripted tool call, not what the model sampled: records of their own.
    expect(records.map((r) => r.tokens)).toEqual(rows.map((r) => [...r.prompt_tokens!, ...r.sampled_tokens!]));
    expect(records.map((r) => r.weights)).toEqual(rows.map((r) => [...r.prompt_tokens!.map(() => 0), ...r.sampled_tokens!.map(() => 1)]));
    expect(writeDataset(rows, [], { format: 'sft', out: join(dir, 'tools.jsonl'), filter: { toolUse: true } })).toMatchObject({ rows: 1, records: 1 });

    // SL on the export, capture on: its forward_backward is recorded with a digest of each datum's tokens.
    const config = join(dir, 'sl_from_capture.json');
    writeFileSync(config, JSON.stringify({ model_name: MODEL, dataset: { file_path: out, batch_size: 4 }, learning_rate: 0.01, lora_rank: 8, num_epochs: 1, save_every: 0, eval_every: 0, capture: { url: store.baseUrl } }));
    const id = `sl-from-capture-${Date.now()}`;
    const trained = await cookbookOn(stack, ['train', 'sl', config, `log_path=${join(dir, 'run')}`, '--wait', '--id', id]);
    expect(trained.code, trained.err).toBe(0);
    let ops: Annotation[] = [];
    await waitUntil('the run’s training calls in the store', async () => {
      ops = (await store.annotations({ run_id: id, kind: 'train_op' })).annotations;
      return ops.length >= 2;
    });
    const fb = ops.find((o) => (o.payload as { op: string }).op === 'forward_backward')!.payload as { num_datums: number; datums: Array<{ n_tokens: number; tokens_sha256: string; weight_sum: number }> };
    expect(fb.num_datums).toBe(4);
    expect(fb.datums.map((d) => d.tokens_sha256).sort()).toEqual(records.map((r) => sequenceDigest(r.tokens)).sort());
    for (const d of fb.datums) expect(d.weight_sum).toBeCloseTo(1, 5); // SL's mean reduction over the sampled tokens
    expect(ops.find((o) => (o.payload as { op: string }).op === 'optim_step')).toBeDefined();
  });
});
