// The client's surface against the in-process fake server: configuration, negotiation, sessions,
// heartbeats, encodings, seq ids and chunking. Faults are in faults.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resolveOptions } from '../../src/backends/config.js';
import { BackendError } from '../../src/backends/types.js';
import { backendFor, sftDatum } from './helpers.js';
import { fakeLogprob, FakeTinkerServer, startFakeServer } from './fake-server.js';

let server: FakeTinkerServer;
const closers: Array<() => Promise<void>> = [];
beforeEach(async () => {
  server = await startFakeServer();
});
afterEach(async () => {
  while (closers.length) await closers.pop()!();
  await server.stop();
});
function backend(opts: Parameters<typeof backendFor>[1] = {}) {
  const b = backendFor(server.baseUrl, opts);
  closers.push(() => b.close());
  return b;
}

describe('configuration', () => {
  it('reads TINKER_BASE_URL / TINKER_API_KEY, options win, and the key must look like a Tinker key', () => {
    const env = { TINKER_BASE_URL: 'http://127.0.0.1:1/prefix', TINKER_API_KEY: 'tml-env', TINKER_TAGS: 'a, b' };
    const r = resolveOptions({ env });
    expect([r.baseUrl, r.apiKey, r.tags]).toEqual(['http://127.0.0.1:1/prefix', 'tml-env', ['a', 'b']]);
    expect(resolveOptions({ env, apiKey: 'tml-opt', baseUrl: 'http://h:2' })).toMatchObject({ apiKey: 'tml-opt', baseUrl: 'http://h:2' });
    expect(resolveOptions({ env: { TINKER_API_KEY: 'tml-x' } }).baseUrl).toMatch(/^https:\/\/tinker\.thinkingmachines\.dev/);
    expect(() => resolveOptions({ env: {} })).toThrow(BackendError);
    expect(() => resolveOptions({ env: {}, apiKey: 'sk-123' })).toThrow(/tml-/);
  });

  it('sends X-API-Key on every request and appends endpoint paths to a base path (§1.1)', async () => {
    const b = backend({ baseUrl: `${server.baseUrl}/` });
    await b.capabilities();
    for (const r of server.requests) expect(r.headers['x-api-key']).toBe('tml-test');
    expect(server.requests.map((r) => r.path)).toEqual(['/api/v1/client/config', '/api/v1/get_server_capabilities']);
  });

  it('drops capability entries without a model name', async () => {
    expect(await backend().capabilities()).toEqual({ supported_models: [{ model_name: 'tiny-qwen3' }] });
  });
});

describe('client/config negotiation', () => {
  it('defaults: protobuf, parallel chunks, 1024 datums, 5 MB', async () => {
    expect(await backend().ready()).toEqual({
      jwtAuth: false,
      parallelChunks: true,
      compressFwdbwd: false,
      maxChunkLen: 1024,
      maxChunkBytes: 5_000_000,
      encoding: 'protobuf',
    });
    expect(server.requestsTo('/api/v1/client/config')[0].json).toEqual({ sdk_version: '0.25.0' });
  });

  it('honours the server chunk limit; chunks 2..n are submitted before chunk 1, each with its own seq id', async () => {
    await server.stop();
    server = await startFakeServer({ clientConfig: { fwdbwd_max_chunk_len: 2 } });
    const b = backend();
    const s = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    const data = [1, 2, 3, 4, 5].map((i) => sftDatum([i, i + 1, i + 2]));
    const fb = await s.forwardBackward(data, 'cross_entropy', { seqId: 1 });
    expect(fb.seqIds).toBe(3);
    const fbReqs = server.requestsTo('/api/v1/forward_backward');
    expect(fbReqs.map((r) => r.proto!.data.length).sort()).toEqual([1, 2, 2]);
    expect(fbReqs[fbReqs.length - 1].proto!.seqId).toBe(1); // first chunk last
    expect(new Set(fbReqs.map((r) => r.proto!.seqId))).toEqual(new Set([1, 2, 3]));
    const out = await fb.result();
    // outputs concatenated in datum order across chunks
    expect(out.loss_fn_outputs.map((o) => o.logprobs.data)).toEqual(data.map((d) => d.loss_fn_inputs.target_tokens.data.map((t) => Math.fround(fakeLogprob(t, 0)))));
    expect(out.metrics['datums:mean']).toBeCloseTo((2 * 2 + 2 * 2 + 1 * 1) / 5);
    expect(Object.keys(out.metrics).filter((k) => k.startsWith('clock_cycle:unique'))).toHaveLength(3);
    const opt = await s.optimStep({ learning_rate: 1e-3 }, { seqId: 1 + fb.seqIds });
    await opt.result();
    expect(server.applied.map((a) => a.seq)).toEqual([0, 1, 2, 3, 4]);
  });

  it('with parallel_fwdbwd_chunks=false, chunks go strictly in order; a client-side limit only lowers the server one', async () => {
    await server.stop();
    server = await startFakeServer({ clientConfig: { parallel_fwdbwd_chunks: false, fwdbwd_max_chunk_len: 3 } });
    const b = backend({ maxChunkLen: 2 });
    expect((await b.ready()).maxChunkLen).toBe(2);
    const s = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    const fb = await s.forward([1, 2, 3, 4, 5].map((i) => sftDatum([i, i])), 'cross_entropy', { seqId: 1 });
    expect(server.requestsTo('/api/v1/forward_backward').map((r) => [r.proto!.seqId, r.proto!.forwardOnly])).toEqual([
      [1, true],
      [2, true],
      [3, true],
    ]);
    expect((await fb.result()).loss_fn_outputs).toHaveLength(5);
    const b2 = backend({ maxChunkLen: 100 });
    expect((await b2.ready()).maxChunkLen).toBe(3);
  });

  it('falls back to JSON when client/config does not exist (JSON-era server) or says proto_write_fwdbwd=false', async () => {
    for (const clientConfig of ['absent', { proto_write_fwdbwd: false }] as const) {
      await server.stop();
      server = await startFakeServer({ clientConfig });
      const b = backend();
      expect((await b.ready()).encoding).toBe('json');
      const s = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
      const fwd = await s.forward([sftDatum([5, 6, 7])], 'cross_entropy', { seqId: 1 });
      const fb = await s.forwardBackward([sftDatum([5, 6, 7])], 'cross_entropy', { seqId: 2, lossFnConfig: { a: 1 } });
      expect((await fwd.result()).loss_fn_outputs[0].logprobs.data).toEqual([6, 7].map((t) => Math.fround(fakeLogprob(t, 0))));
      await fb.result();
      const [fwdReq] = server.requestsTo('/api/v1/forward');
      expect(fwdReq.json).toMatchObject({ model_id: s.modelId, seq_id: 1, forward_input: { loss_fn: 'cross_entropy' } });
      expect(fwdReq.json.forward_input.data[0].model_input.chunks[0]).toEqual({ tokens: [5, 6], type: 'encoded_text' });
      const [fbReq] = server.requestsTo('/api/v1/forward_backward');
      expect(fbReq.headers['content-type']).toBe('application/json');
      expect(fbReq.json.forward_backward_input).toMatchObject({ loss_fn: 'cross_entropy', loss_fn_config: { a: 1 } });
      // JSON mode asks for JSON results only
      for (const r of server.requestsTo('/api/v1/retrieve_future')) expect(r.headers.accept).toBe('application/json');
    }
  });

  it('an explicit encoding option wins over the server default', async () => {
    const b = backend({ encoding: 'json' });
    expect((await b.ready()).encoding).toBe('json');
  });

  it('exchanges the API key for a JWT when the server enables pjwt auth', async () => {
    await server.stop();
    const payload = Buffer.from(JSON.stringify({ exp: Math.floor(Date.now() / 1000) + 3600 })).toString('base64url');
    const jwt = `eyJhbGciOiJub25lIn0.${payload}.sig`;
    server = await startFakeServer({ clientConfig: { pjwt_auth_enabled: true } });
    server.fault({ path: '/api/v1/auth/token', times: 1, action: { status: 200, body: { jwt } } });
    const b = backend();
    await b.capabilities();
    const [tokenReq] = server.requestsTo('/api/v1/auth/token');
    expect(tokenReq.headers['x-api-key']).toBe('tml-test');
    expect(server.requestsTo('/api/v1/get_server_capabilities')[0].headers['x-api-key']).toBe(jwt);
  });
});

describe('session and heartbeat', () => {
  it('creates the session lazily, heartbeats on an unref’d timer, and stops on close()', async () => {
    const b = backendFor(server.baseUrl, { heartbeatIntervalMs: 30 });
    await b.capabilities();
    expect(server.requestsTo('/api/v1/create_session')).toHaveLength(0);
    const sid = await b.sessionId();
    expect(server.requestsTo('/api/v1/create_session')[0].json).toMatchObject({ sdk_version: '0.25.0', type: 'create_session', tags: [] });
    // Waits for the beats rather than a fixed time: on a loaded machine 30 ms timers run late.
    await vi.waitFor(() => expect(server.requestsTo('/api/v1/session_heartbeat').length).toBeGreaterThanOrEqual(3), { timeout: 60_000, interval: 20 });
    const beats = server.requestsTo('/api/v1/session_heartbeat');
    expect(beats[0].json).toEqual({ session_id: sid, type: 'session_heartbeat' });
    expect(b.heartbeatActive).toBe(true);
    await b.close();
    expect(b.heartbeatActive).toBe(false);
    // No heartbeat goes out once closed. One sent just before may still reach the server after
    // close() returns (a loaded machine delays its arrival), so what counts is what the client
    // sends: a fetch whose signal close() has not aborted.
    const sent: string[] = [];
    const fetchBefore = globalThis.fetch;
    const spy = vi.spyOn(globalThis, 'fetch').mockImplementation((input, init) => {
      if (!init?.signal?.aborted) sent.push(String(input));
      return fetchBefore(input, init);
    });
    try {
      await new Promise((r) => setTimeout(r, 120)); // four heartbeat intervals
    } finally {
      spy.mockRestore();
    }
    expect(sent.filter((url) => url.endsWith('/api/v1/session_heartbeat'))).toEqual([]);
    await expect(b.capabilities()).rejects.toThrow(/closed/);
  });

  it('a heartbeat timer never keeps the process alive', async () => {
    const { execFile } = await import('node:child_process');
    const script = `
      import { createTinkerBackend } from './src/backends/index.ts';
      const b = createTinkerBackend({ baseUrl: ${JSON.stringify(server.baseUrl)}, apiKey: 'tml-x', heartbeatIntervalMs: 50 });
      await b.sessionId();
      console.log('session ok');
    `;
    // Async child: the fake server lives in this process and must keep answering. The timeout bounds
    // a hang, not a start: tsx alone can take many seconds on a loaded machine.
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd(), timeout: 120_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
      void child;
    });
    expect(r.stdout, r.stderr).toContain('session ok');
    expect(r.code).toBe(0); // exited by itself, not killed by the timeout
  });

  it('a session the server forgot is replaced on the next use', async () => {
    const b = backendFor(server.baseUrl, { heartbeatIntervalMs: 20 });
    closers.push(() => b.close());
    const first = await b.sessionId();
    server.fault({ path: '/api/v1/session_heartbeat', times: 1, action: { status: 404, body: { detail: 'unknown session' } } });
    // Until a heartbeat met the 404 (20 ms timers run late on a loaded machine).
    await vi.waitFor(async () => expect(await b.sessionId()).not.toBe(first), { timeout: 60_000, interval: 20 });
    const second = await b.sessionId();
    const model = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    expect(model.modelId).toBe(`${second}:train:0`);
  });
});

it('create_model in a session the server forgot (before any heartbeat noticed) retries once in a new session', async () => {
  const b = backend(); // default 10 s heartbeat: it will not notice in time
  const first = await b.sessionId();
  server.forgetSessions();
  const m = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
  expect(m.modelId.startsWith(first)).toBe(false);
  server.forgetSessions();
  const sampler = await b.createSamplingSession({ baseModel: 'tiny-qwen3' });
  expect(sampler.samplingSessionId).toMatch(/^sess3:sample:0$/);
  expect(server.requestsTo('/api/v1/create_session')).toHaveLength(3);
});

describe('SDK 0.38 sampling options', () => {
  const prompt = { chunks: [{ type: 'encoded_text' as const, tokens: [1, 2, 3, 4] }] };

  it("sends the 0.25 dialect's fields with their defaults, and SDK 0.38's and the optional ones only when set", async () => {
    const sampler = await backend().createSamplingSession({ baseModel: 'tiny-qwen3' });
    await sampler.sample(prompt, 1, { max_tokens: 2 });
    await sampler.sample(prompt, 1, { max_tokens: 2 }, { includePromptLogprobs: true, promptLogprobsLastN: 2 }).catch(() => undefined);
    const [plain, lastN] = server.requestsTo('/api/v1/asample').map((r) => r.json);
    expect(plain).toMatchObject({ prompt_logprobs: false, topk_prompt_logprobs: 0 });
    // SDK 0.38 sends these at their defaults too; servers of the 0.25 dialect (TuFT) refuse them.
    for (const key of ['topk_sample_logprobs', 'prompt_alt_tokens_k', 'record_stability_info']) expect(plain).not.toHaveProperty(key);
    expect(plain).not.toHaveProperty('prompt_logprobs_last_n');
    expect(plain).not.toHaveProperty('target_prompt_logprobs');
    expect(lastN).toMatchObject({ prompt_logprobs: true, prompt_logprobs_last_n: 2 });
  });

  it('a server that ignores an option fails the sample by name instead of passing for an answer', async () => {
    // The fake server predates SDK 0.38's scoring options: it accepts and ignores them.
    const sampler = await backend().createSamplingSession({ baseModel: 'tiny-qwen3' });
    const target = { data: [5, 6, 7], dtype: 'int64' as const, shape: [3, 1] };
    for (const [opts, name] of [
      [{ topkSampleLogprobs: 2 }, 'topk_sample_logprobs'],
      [{ promptAltTokensK: 2 }, 'prompt_alt_tokens_k'],
      [{ targetPromptLogprobs: target }, 'target_prompt_logprobs'],
      [{ includePromptLogprobs: true, promptLogprobsLastN: 1 }, 'prompt_logprobs_last_n'],
    ] as const) {
      await expect(sampler.sample(prompt, 1, { max_tokens: 2 }, opts)).rejects.toThrow(`${name} was requested but the server ignored it`);
    }
  });

  it('checks options before any request, as the SDK does', async () => {
    const sampler = await backend().createSamplingSession({ baseModel: 'tiny-qwen3' });
    const before = server.requestsTo('/api/v1/asample').length;
    for (const opts of [
      { promptAltTokensK: -1 },
      { topkSampleLogprobs: 1.5 },
      { promptLogprobsLastN: 2 },
      { targetPromptLogprobs: { data: [1, 2], dtype: 'float32' as const, shape: [2, 1] } },
      { targetPromptLogprobs: { data: [1, 2], dtype: 'int64' as const, shape: [2] } },
    ]) {
      await expect(sampler.sample(prompt, 1, { max_tokens: 2 }, opts)).rejects.toMatchObject({ kind: 'bad_request' });
    }
    expect(server.requestsTo('/api/v1/asample')).toHaveLength(before);
  });

  it('create_model names the requested optimizer; Dimuon steps travel as optimizer_params', async () => {
    const b = backend();
    const m = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 }, optimizer: { type: 'dimuon', version: 1 } });
    await (await m.optimStep({ type: 'dimuon', learning_rate: 0.01 }, { seqId: 1 })).result().catch(() => undefined);
    expect(server.requestsTo('/api/v1/create_model')[0].json.optimizer_config).toEqual({ type: 'dimuon', version: 1 });
    expect(server.requestsTo('/api/v1/optim_step')[0].json).toEqual({
      optimizer_params: { type: 'dimuon', learning_rate: 0.01, grad_clip_norm: 0, beta1: 0.9 }, model_id: m.modelId, seq_id: 1, type: 'optim_step',
    });
  });
});

describe('training surface', () => {
  it('create_model is the model’s seq 0; requests carry the caller’s seq ids and Adam defaults', async () => {
    const b = backend();
    const s = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 8, seed: 3, train_unembed: false }, userMetadata: { renderer_name: 'qwen3' } });
    expect(server.requestsTo('/api/v1/create_model')[0].json).toMatchObject({
      model_seq_id: 0,
      base_model: 'tiny-qwen3',
      lora_config: { rank: 8, seed: 3, train_unembed: false, train_mlp: true, train_attn: true },
      user_metadata: { renderer_name: 'qwen3' },
      type: 'create_model',
    });
    const opt = await s.optimStep({ learning_rate: 2e-4, grad_clip_norm: 1 }, { seqId: 1 });
    expect(await opt.result()).toEqual({ metrics: { 'unclipped_grad_l2:mean': 0 } });
    expect(server.requestsTo('/api/v1/optim_step')[0].json).toEqual({
      adam_params: { learning_rate: 2e-4, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0, grad_clip_norm: 1 },
      model_id: s.modelId,
      seq_id: 1,
      type: 'optim_step',
    });
    const save = await s.saveState('ckpt-1', { seqId: 2, ttlSeconds: 60 });
    expect(await save.result()).toEqual({ path: `tinker://${s.modelId}/weights/ckpt-1` });
    expect(server.requestsTo('/api/v1/save_weights')[0].json).toEqual({ model_id: s.modelId, path: 'ckpt-1', seq_id: 2, overwrite: false, ttl_seconds: 60, type: 'save_weights' });
    const samp = await s.saveWeightsForSampler('s-1', { seqId: 3 });
    expect(await samp.result()).toEqual({ path: `tinker://${s.modelId}/sampler_weights/s-1` });
    const load = await s.loadState(`tinker://${s.modelId}/weights/ckpt-1`, { seqId: 4, withOptimizer: true });
    await load.result();
    expect(server.requestsTo('/api/v1/load_weights')[0].json).toMatchObject({ seq_id: 4, optimizer: true, type: 'load_weights' });
    const eph = await s.saveWeightsAndGetSamplingSession({ seqId: 5 });
    const sampler = await eph.result();
    expect(sampler.samplingSessionId).toMatch(/:sample:0$/);
    expect(server.requestsTo('/api/v1/save_weights_for_sampler')[1].json).toEqual({ model_id: s.modelId, sampling_session_seq_id: 0, seq_id: 5, type: 'save_weights_for_sampler' });
    expect(server.applied.map((a) => a.op)).toEqual(['create_model', 'optim_step', 'save_weights', 'save_weights_for_sampler', 'load_weights', 'save_weights_for_sampler']);
  });

  it('rejects invalid seq ids and checkpoint names without sending anything', async () => {
    const s = backend().openTrainingSession('sess1:train:0');
    await expect(s.optimStep({ learning_rate: 1 }, { seqId: 0 })).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(s.forwardBackward([sftDatum([1, 2])], 'cross_entropy', { seqId: 1.5 })).rejects.toMatchObject({ kind: 'bad_request' });
    await expect(s.saveState('a/b', { seqId: 1 })).rejects.toMatchObject({ kind: 'bad_request' });
    expect(server.requestsTo('/api/v1/optim_step')).toHaveLength(0);
  });

  it('an ephemeral sampler of a model from another session needs an explicit sampling seq id', async () => {
    const b = backend();
    await b.sessionId();
    const foreign = b.openTrainingSession('other:train:0');
    await expect(foreign.saveWeightsAndGetSamplingSession({ seqId: 3 })).rejects.toThrow(/samplingSessionSeqId/);
  });

  it('createTrainingSessionFromState: weights_info → create_model with its rank → load_weights seq 1', async () => {
    const b = backend();
    const { session, nextSeqId } = await b.createTrainingSessionFromState('tinker://r:train:0/weights/x', { withOptimizer: false });
    expect(nextSeqId).toBe(2);
    expect(server.requestsTo('/api/v1/create_model')[0].json.lora_config).toEqual({ rank: 4, train_unembed: true, train_mlp: false, train_attn: true });
    expect(server.requestsTo('/api/v1/load_weights')[0].json).toEqual({ model_id: session.modelId, seq_id: 1, path: 'tinker://r:train:0/weights/x', optimizer: false, type: 'load_weights' });
  });

  it('submitting forward_backward and optim_step before awaiting either works; result() is memoised', async () => {
    const b = backend();
    const s = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    const fb = await s.forwardBackward([sftDatum([1, 2, 3])], 'cross_entropy', { seqId: 1 });
    const opt = await s.optimStep({ learning_rate: 1e-3 }, { seqId: 2 });
    expect(fb.result()).toBe(fb.result());
    const [o, f] = await Promise.all([opt.result(), fb.result()]);
    expect(o.metrics).toBeNull();
    expect(f.metrics['loss:sum']).toBeCloseTo(-(fakeLogprob(2, 0) + fakeLogprob(3, 0)), 5);
  });

  it('lists and deletes checkpoints with the checkpoint id as two path segments', async () => {
    const b = backend();
    expect(await b.listCheckpoints('s:train:0')).toEqual([
      { checkpoint_id: 'weights/a', checkpoint_type: 'training', tinker_path: 'tinker://s:train:0/weights/a', time: '2026-01-01T00:00:00Z' },
    ]);
    await b.deleteCheckpoint('s:train:0', 'weights/a');
    await b.deleteCheckpointByPath('tinker://s:train:0/sampler_weights/b');
    expect(server.requests.filter((r) => r.method === 'DELETE').map((r) => r.path)).toEqual([
      '/api/v1/training_runs/s:train:0/checkpoints/weights/a',
      '/api/v1/training_runs/s:train:0/checkpoints/sampler_weights/b',
    ]);
    await expect(b.deleteCheckpoint('s:train:0', 'nokind')).rejects.toMatchObject({ kind: 'bad_request' });
  });
});

describe('sampling surface', () => {
  it('samples with params, seed, prompt logprobs and top-k (protobuf results)', async () => {
    const b = backend();
    const sampler = await b.createSamplingSession({ baseModel: 'tiny-qwen3' });
    expect(server.requestsTo('/api/v1/create_sampling_session')[0].json).toMatchObject({ sampling_session_seq_id: 0, base_model: 'tiny-qwen3' });
    const prompt = { chunks: [{ type: 'encoded_text' as const, tokens: [3, 4, 5] }] };
    const r = await sampler.sample(prompt, 2, { max_tokens: 2, seed: 7, temperature: 0.5, stop: ['\n'] }, { includePromptLogprobs: true, topkPromptLogprobs: 2 });
    const [req] = server.requestsTo('/api/v1/asample');
    expect(req.json).toEqual({
      num_samples: 2,
      prompt: { chunks: [{ tokens: [3, 4, 5], type: 'encoded_text' }] },
      sampling_params: { temperature: 0.5, top_k: -1, top_p: 1, max_tokens: 2, seed: 7, stop: ['\n'] },
      sampling_session_id: sampler.samplingSessionId,
      seq_id: 0,
      prompt_logprobs: true,
      topk_prompt_logprobs: 2,
      type: 'sample',
    });
    expect(req.headers['x-tinker-sampling-backpressure']).toBe('1');
    expect(server.requestsTo('/api/v1/retrieve_future').at(-1)!.headers.accept).toContain('application/x-protobuf');
    expect(r.sequences).toEqual([
      { stop_reason: 'length', tokens: [10, 11], logprobs: [-0.5, -0.25] },
      { stop_reason: 'length', tokens: [11, 11], logprobs: [-0.5, -0.25] },
    ]);
    expect(r.prompt_logprobs).toEqual([null, Math.fround(fakeLogprob(4, 0)), Math.fround(fakeLogprob(5, 0))]);
    expect(r.topk_prompt_logprobs).toEqual([null, [[1, -0.5], [2, -1]], [[1, -0.5], [2, -1]]]);
    const lps = await sampler.computeLogprobs(prompt);
    expect(lps).toEqual(r.prompt_logprobs);
    expect(server.requestsTo('/api/v1/asample')[1].json).toMatchObject({ seq_id: 1, num_samples: 1, sampling_params: { max_tokens: 1 }, prompt_logprobs: true });
  });

  it('sampler from a tinker path; non-tinker paths are refused client-side', async () => {
    const b = backend();
    await b.createSamplingSession({ modelPath: 'tinker://s:train:0/sampler_weights/x' });
    expect(server.requestsTo('/api/v1/create_sampling_session')[0].json).toMatchObject({ model_path: 'tinker://s:train:0/sampler_weights/x', type: 'create_sampling_session' });
    await expect(b.createSamplingSession({ modelPath: '/tmp/x' })).rejects.toMatchObject({ kind: 'bad_request' });
  });
});
