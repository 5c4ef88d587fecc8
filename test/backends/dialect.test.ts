// Dialect tolerance against the in-process fake server: what is left unsaid at its default, the wire
// switch (TINKER_WIRE / the encoding option), the JSON fallback when the first protobuf body is
// refused, and capabilities that name models under `model_id`. The same against the real engine:
// wire.integration.test.ts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { forgetServerDialects, parseWire, resolveOptions } from '../../src/backends/config.js';
import { BackendError, servedEntry } from '../../src/backends/types.js';
import { applyWireFlag } from '../../src/cli/connect.js';
import { checkBackend, resolveRun } from '../../src/cli/train.js';
import { cookbookProcess } from '../support/cli.js';
import { backendFor, sftDatum } from './helpers.js';
import { FakeTinkerServer, startFakeServer } from './fake-server.js';

let server: FakeTinkerServer;
const closers: Array<() => Promise<void>> = [];
beforeEach(async () => {
  server = await startFakeServer();
});
afterEach(async () => {
  while (closers.length) await closers.pop()!();
  await server.stop();
  forgetServerDialects();
});
function backend(opts: Parameters<typeof backendFor>[1] = {}) {
  const b = backendFor(server.baseUrl, opts);
  closers.push(() => b.close());
  return b;
}
const FB = '/api/v1/forward_backward';
const data = [sftDatum([5, 6, 7, 8])];
const isProto = (r: { headers: Record<string, unknown> }) => String(r.headers['content-type']).includes('protobuf');
/** The forward/forward_backward requests of one model, in either dialect (JSON's forward has its own path). */
const requestsOf = (modelId: string) =>
  server.requests.filter((r) => (r.path === FB || r.path === '/api/v1/forward') && (r.proto?.modelId === modelId || r.json?.model_id === modelId));
/** What a JSON-only server (hatchery-core) answers a protobuf body. */
const crashOnProtobuf = (times = 1_000) => server.fault({ path: FB, times, when: isProto, action: { status: 500, body: 'Internal Server Error' } });

describe('fields at their defaults are left out', () => {
  it('create_model names no optimizer for AdamW (0.25-dialect servers refuse the field), and names any other', async () => {
    const b = backend();
    await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 }, optimizer: { type: 'adamw' } });
    await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 }, optimizer: { type: 'dimuon', version: 1 } });
    const bodies = server.requestsTo('/api/v1/create_model').map((r) => r.json);
    expect(bodies.map((j) => j.optimizer_config)).toEqual([undefined, undefined, { type: 'dimuon', version: 1 }]);
    expect(Object.keys(bodies[0])).not.toContain('optimizer_config');
  });

  it("asample sends SDK 0.38's options only when asked; save_weights_for_sampler sends no kind", async () => {
    const b = backend();
    const sampler = await b.createSamplingSession({ baseModel: 'tiny-qwen3' });
    const prompt = { chunks: [{ type: 'encoded_text' as const, tokens: [1, 2, 3] }] };
    await sampler.sample(prompt, 1, { max_tokens: 2 });
    await sampler.sample(prompt, 1, { max_tokens: 2 }, { recordStabilityInfo: true });
    const [plain, stable] = server.requestsTo('/api/v1/asample').map((r) => r.json);
    for (const key of ['topk_sample_logprobs', 'prompt_alt_tokens_k', 'record_stability_info']) expect(plain).not.toHaveProperty(key);
    expect(plain).toMatchObject({ prompt_logprobs: false, topk_prompt_logprobs: 0 });
    expect(stable).toMatchObject({ record_stability_info: true });
    const m = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    await (await m.saveWeightsForSampler('s1', { seqId: 1 })).result();
    expect(server.requestsTo('/api/v1/save_weights_for_sampler')[0].json).not.toHaveProperty('kind');
  });
});

describe('the wire switch', () => {
  it('TINKER_WIRE=json|proto sets the dialect (the option wins); anything else is an error naming it', () => {
    const base = { apiKey: 'tml-x', baseUrl: 'http://127.0.0.1:1' };
    expect(resolveOptions({ ...base, env: { TINKER_WIRE: 'json' } })).toMatchObject({ encoding: 'json', encodingExplicit: true });
    expect(resolveOptions({ ...base, env: { TINKER_WIRE: ' proto ' } })).toMatchObject({ encoding: 'protobuf', encodingExplicit: true });
    expect(resolveOptions({ ...base, env: { TINKER_WIRE: '' } })).toMatchObject({ encoding: 'protobuf', encodingExplicit: false });
    expect(resolveOptions({ ...base, encoding: 'json', env: { TINKER_WIRE: 'proto' } }).encoding).toBe('json');
    expect(() => resolveOptions({ ...base, env: { TINKER_WIRE: 'grpc' } })).toThrow('TINKER_WIRE must be json or proto, got "grpc"');
    expect(parseWire('protobuf', '--wire')).toBe('protobuf');
  });

  it('--wire sets TINKER_WIRE for the process (checked first); a run config takes `wire: json|proto` and refuses anything else', () => {
    const before = process.env.TINKER_WIRE;
    try {
      applyWireFlag(' JSON ');
      expect(process.env.TINKER_WIRE).toBe('json');
      expect(() => applyWireFlag('xml')).toThrow('--wire must be json or proto, got "xml"');
      expect(process.env.TINKER_WIRE).toBe('json');
    } finally {
      if (before === undefined) delete process.env.TINKER_WIRE;
      else process.env.TINKER_WIRE = before;
    }
    const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');
    expect(resolveRun('sl', config, []).config).toMatchObject({ wire: null });
    expect(resolveRun('sl', config, ['wire=proto']).config).toMatchObject({ wire: 'proto' });
    expect(() => resolveRun('sl', config, ['wire=grpc'])).toThrow(/wire/);
  });

  it('`cookbook train … --wire json` sets the run\'s config key (a worker already running reads it there); a bad value stops it', async () => {
    const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');
    const [ok, bad] = await Promise.all([
      cookbookProcess(['train', 'sl', config, '--dry-run', '--wire', 'json']).done,
      cookbookProcess(['train', 'sl', config, '--dry-run', '--wire', 'grpc']).done,
    ]);
    expect(ok.code, ok.err).toBe(0);
    expect(ok.out).toContain('"wire": "json"');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--wire must be json or proto, got "grpc"');
  });

  it('forced JSON sends no protobuf body; forced protobuf does not fall back when refused', async () => {
    crashOnProtobuf();
    const json = await backend({ env: { TINKER_WIRE: 'json' } }).createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    await (await json.forwardBackward(data, 'cross_entropy', { seqId: 1 })).result();
    expect(server.requestsTo(FB).filter(isProto)).toHaveLength(0);

    const proto = backend({ env: { TINKER_WIRE: 'proto' }, retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2 } });
    const m = await proto.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    const err = await m.forwardBackward(data, 'cross_entropy', { seqId: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect((err as BackendError).status).toBe(500);
    const mine = requestsOf(m.modelId);
    expect(mine.map(isProto)).toEqual([true, true, true]); // the first try and its two retries, all protobuf
  });
});

describe('JSON fallback when the first protobuf body is refused', () => {
  it('a 500 to the first protobuf body: resent once as JSON under the same seq id, applied once, remembered for the server', async () => {
    crashOnProtobuf();
    const b = backend();
    expect((await b.ready()).encoding).toBe('protobuf');
    const m = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    const fb = await m.forwardBackward(data, 'cross_entropy', { seqId: 1 });
    await fb.result();
    await (await m.optimStep({ learning_rate: 1e-3 }, { seqId: 2 })).result();
    const sent = server.requestsTo(FB).map((r) => (isProto(r) ? `proto ${r.proto!.seqId}` : `json ${r.json.seq_id}`));
    expect(sent).toEqual(['proto 1', 'json 1']); // not retried as protobuf
    expect(server.applied.filter((a) => a.model === m.modelId).map((a) => a.seq)).toEqual([0, 1, 2]);
    expect((await b.ready()).encoding).toBe('json');
    // Another client of the same server starts in JSON.
    expect((await backend().ready()).encoding).toBe('json');
  });

  it('a 415, 422 or a 400 with a reason falls back too; 502/503, 429 and a bodiless 400 are retried as protobuf', async () => {
    for (const status of [415, 422, 400]) {
      forgetServerDialects();
      server.fault({ path: FB, times: 1, when: isProto, action: { status, body: { detail: 'cannot parse body' } } });
      const m = await backend().createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
      await (await m.forward(data, 'cross_entropy', { seqId: 1 })).result();
      const mine = requestsOf(m.modelId);
      expect(mine.map(isProto), `HTTP ${status}`).toEqual([true, false]);
    }
    for (const action of [{ status: 502 }, { status: 503 }, { status: 429 }, { status: 400 }]) {
      forgetServerDialects();
      server.fault({ path: FB, times: 1, when: isProto, action });
      const b = backend();
      const m = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
      await (await m.forward(data, 'cross_entropy', { seqId: 1 })).result();
      const mine = requestsOf(m.modelId);
      expect(mine.map(isProto), `HTTP ${action.status}`).toEqual([true, true]);
      expect((await b.ready()).encoding).toBe('protobuf');
    }
  });

  it('a request refused as JSON too was bad itself: the client stays on protobuf, for itself and the server', async () => {
    forgetServerDialects();
    const badBody = { status: 400, body: { detail: 'datum 0: target_tokens longer than the input' } };
    server.fault({ path: FB, times: 2, action: badBody }); // the protobuf body, then its JSON resend
    const b = backend();
    const m = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    const err = await m.forwardBackward(data, 'cross_entropy', { seqId: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect((err as BackendError).status).toBe(400);
    expect(requestsOf(m.modelId).map(isProto)).toEqual([true, false]);
    expect((await b.ready()).encoding).toBe('protobuf');
    expect((await backend().ready()).encoding).toBe('protobuf');
    await (await m.forwardBackward(data, 'cross_entropy', { seqId: 1 })).result(); // refused, so never applied: seq 1 again
    expect(requestsOf(m.modelId).map(isProto)).toEqual([true, false, true]);
  });

  it('once a protobuf body was accepted, a later 500 is an ordinary retry in protobuf, never a switch', async () => {
    const b = backend();
    const m = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
    await (await m.forward(data, 'cross_entropy', { seqId: 1 })).result();
    crashOnProtobuf(1);
    await (await m.forward(data, 'cross_entropy', { seqId: 2 })).result();
    expect(server.requestsTo(FB).map(isProto)).toEqual([true, true, true]);
    expect((await b.ready()).encoding).toBe('protobuf');
  });
});

describe('create_sampling_session answered with a future (hatchery-core)', () => {
  it('polls the future and samples in the session its result names', async () => {
    const b = backend();
    const reference = await b.createSamplingSession({ baseModel: 'tiny-qwen3' }); // a session the fake server knows
    server.fault({ path: '/api/v1/create_sampling_session', times: 1, action: { status: 200, body: { request_id: 'fut_1', model_id: 'smp_1', status: 'pending' } } });
    server.fault({
      path: '/api/v1/retrieve_future',
      times: 1,
      when: (r) => r.json?.request_id === 'fut_1',
      action: { status: 200, body: { type: 'create_sampling_session', sampling_session_id: reference.samplingSessionId } },
    });
    const sampler = await b.createSamplingSession({ modelPath: 'tinker://m/sampler_weights/s' });
    expect(sampler.samplingSessionId).toBe(reference.samplingSessionId);
    const r = await sampler.sample({ chunks: [{ type: 'encoded_text', tokens: [1, 2, 3] }] }, 1, { max_tokens: 2 });
    expect(r.sequences).toHaveLength(1);
  });
});

describe('capabilities', () => {
  it('reads model families named under model_id (hatchery-core) as name prefixes', async () => {
    const supported_models = [{ model_id: 'Qwen/Qwen3.5', max_context_length: 65536, tokenizer_id: 'Qwen/Qwen3.5' }, { model_name: 'a', model_id: 'b' }, { model_name: 'Qwen/Qwen3.5-4B' }];
    server.fault({ path: '/api/v1/get_server_capabilities', times: 1, action: { status: 200, body: { supported_models } } });
    const caps = await backend().capabilities();
    expect(caps.supported_models).toEqual([{ model_name: 'Qwen/Qwen3.5', max_context_length: 65536, prefix: true }, { model_name: 'a' }, { model_name: 'Qwen/Qwen3.5-4B' }]);
    expect(servedEntry(caps, 'Qwen/Qwen3.5-27B')).toMatchObject({ model_name: 'Qwen/Qwen3.5', prefix: true });
    expect(servedEntry(caps, 'Qwen/Qwen3.5-4B')).toEqual({ model_name: 'Qwen/Qwen3.5-4B' }); // an exact name first
    expect(servedEntry(caps, 'a-large')).toBeUndefined(); // model_name entries are names, not prefixes
  });

  it("train's check: a model in a model_id family passes, one outside fails naming what is served", async () => {
    const supported_models = [{ model_id: 'Qwen/Qwen3.5' }, { model_id: 'nvidia/NVIDIA-Nemotron-3' }];
    server.fault({ path: '/api/v1/get_server_capabilities', times: 2, action: { status: 200, body: { supported_models } } });
    await expect(checkBackend(server.baseUrl, 'Qwen/Qwen3.5-4B')).resolves.toBeUndefined();
    await expect(checkBackend(server.baseUrl, 'meta-llama/Llama-3.2-1B')).rejects.toThrow('model_name: meta-llama/Llama-3.2-1B is not served by');
  });
});
