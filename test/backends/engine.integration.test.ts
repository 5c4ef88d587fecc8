// The whole client surface against the REAL local engine over HTTP (src/stack/engine.mjs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend, type TinkerBackend } from '../../src/backends/tinker-backend.js';
import { BackendError, type Datum, type TrainingSession } from '../../src/backends/types.js';
import { type EngineHandle, startEngine } from '../support/engine.js';
import { sftDatum } from './helpers.js';

const MODEL = 'tiny-qwen3';

let engine: EngineHandle;
let backend: TinkerBackend;
const extraBackends: TinkerBackend[] = [];
function newBackend(opts: Parameters<typeof createTinkerBackend>[0] = {}): TinkerBackend {
  const b = createTinkerBackend({ baseUrl: engine.baseUrl, apiKey: 'tml-integration', env: {}, ...opts });
  extraBackends.push(b);
  return b;
}

const data: Datum[] = [
  sftDatum([101, 102, 103, 104, 105, 106]),
  sftDatum([201, 202, 203, 204], [0, 1, 1]),
  sftDatum([301, 302, 303, 304, 305], [1, 0.5, 1, 1]),
];

async function newModel(b: TinkerBackend = backend, seed = 7): Promise<TrainingSession> {
  return b.createTrainingSession({ baseModel: MODEL, lora: { rank: 4, seed } });
}
async function forwardLogprobs(s: TrainingSession, seqId: number, d: Datum[] = data): Promise<number[][]> {
  const out = await (await s.forward(d, 'cross_entropy', { seqId })).result();
  return out.loss_fn_outputs.map((o) => o.logprobs.data);
}
async function step(s: TrainingSession, seqId: number, d: Datum[] = data, lr = 1e-2): Promise<number> {
  const fb = await s.forwardBackward(d, 'cross_entropy', { seqId });
  const opt = await s.optimStep({ learning_rate: lr }, { seqId: seqId + fb.seqIds });
  await Promise.all([fb.result(), opt.result()]);
  return seqId + fb.seqIds + opt.seqIds;
}
const weightedLoss = (lps: number[][], d: Datum[] = data) =>
  lps.reduce((acc, lp, i) => acc - lp.reduce((a, x, j) => a + x * d[i].loss_fn_inputs.weights.data[j], 0), 0);
function maxAbsDiff(a: number[][], b: number[][]): number {
  return Math.max(...a.flatMap((row, i) => row.map((x, j) => Math.abs(x - b[i][j]))));
}

describe('TinkerBackend against the real engine', () => {
  beforeAll(async () => {
    engine = await startEngine();
    backend = createTinkerBackend({ baseUrl: engine.baseUrl, apiKey: 'tml-integration', env: {} });
  }, 45 * 60_000);

  afterAll(async () => {
    await Promise.all([backend, ...extraBackends].map((b) => b?.close()));
    await engine?.stop();
  });

  it('negotiates client/config and lists the built-in models', async () => {
    const settings = await backend.ready();
    expect(settings.encoding).toBe('protobuf');
    expect(settings.maxChunkLen).toBeGreaterThan(0);
    const caps = await backend.capabilities();
    const names = caps.supported_models.map((m) => m.model_name);
    expect(names).toEqual(expect.arrayContaining(['tiny-qwen3', 'tiny-llama3']));
  });

  it('speaks protobuf on the wire by default: protobuf forward_backward bodies and results', async () => {
    const seen: string[] = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = (async (url: string | URL | Request, init?: RequestInit) => {
      const res = await realFetch(url, init);
      const headers = (init?.headers ?? {}) as Record<string, string>;
      seen.push(`${String(url).replace(engine.baseUrl, '')} ${headers['Content-Type'] ?? '-'} ${res.headers.get('content-type')}`);
      return res;
    }) as typeof fetch;
    try {
      const s = await newModel();
      await (await s.forwardBackward(data, 'cross_entropy', { seqId: 1 })).result();
      const sampler = await backend.createSamplingSession({ baseModel: MODEL });
      await sampler.sample({ chunks: [{ type: 'encoded_text', tokens: [5, 6] }] }, 1, { max_tokens: 2, seed: 1 });
    } finally {
      globalThis.fetch = realFetch;
    }
    expect(seen).toContain('/api/v1/forward_backward application/x-protobuf application/json');
    // one ForwardBackward and one Sample result decoded from protobuf
    expect(seen.filter((l) => l === '/api/v1/retrieve_future application/json application/x-protobuf')).toHaveLength(2);
  });

  it('trains: forward, forward_backward + optim_step lowers the loss; get_info describes the model', async () => {
    const s = await newModel();
    const info = await s.getInfo();
    expect(info.model_id).toBe(s.modelId);
    expect(info.lora_rank ?? 4).toBe(4);
    const before = await forwardLogprobs(s, 1);
    expect(before.map((r) => r.length)).toEqual([5, 3, 4]);
    let seq = 2;
    for (let i = 0; i < 5; i++) seq = await step(s, seq);
    const fwd = await (await s.forward(data, 'cross_entropy', { seqId: seq })).result();
    expect(fwd.metrics['loss:sum']).toBeCloseTo(weightedLoss(fwd.loss_fn_outputs.map((o) => o.logprobs.data)), 3);
    expect(weightedLoss(fwd.loss_fn_outputs.map((o) => o.logprobs.data))).toBeLessThan(weightedLoss(before));
  });

  it('a resent request (same seq id, same payload, another client instance) is applied once', async () => {
    const [a, b] = [await newModel(backend, 11), await newModel(backend, 11)];
    const fb1 = await (await a.forwardBackward(data, 'cross_entropy', { seqId: 1 })).result();
    // the retried activity: a fresh client in "another process" resends seq 1
    const again = newBackend().openTrainingSession(a.modelId);
    const fb1b = await (await again.forwardBackward(structuredClone(data), 'cross_entropy', { seqId: 1 })).result();
    expect(fb1b.metrics['loss:sum']).toBe(fb1.metrics['loss:sum']);
    // A second, different batch before the update: Adam's first step is blind to the scale of the
    // gradient, so a doubled gradient alone would update the weights the same; doubled beside
    // another batch's, it turns the update's direction.
    const other = data.slice(1);
    await (await a.forwardBackward(other, 'cross_entropy', { seqId: 2 })).result();
    await (await a.optimStep({ learning_rate: 1e-2 }, { seqId: 3 })).result();
    await (await b.forwardBackward(data, 'cross_entropy', { seqId: 1 })).result();
    await (await b.forwardBackward(other, 'cross_entropy', { seqId: 2 })).result();
    await (await b.optimStep({ learning_rate: 1e-2 }, { seqId: 3 })).result();
    // Had the resend been applied, a's update would differ from b's.
    expect(await forwardLogprobs(a, 4)).toEqual(await forwardLogprobs(b, 4));
  });

  it('a seq id reused with a different payload is a conflict', async () => {
    const s = await newModel();
    await (await s.forwardBackward(data, 'cross_entropy', { seqId: 1 })).result();
    const err = await s.forwardBackward(data.slice(1), 'cross_entropy', { seqId: 1 }).catch((e) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect(err).toMatchObject({ kind: 'conflict', status: 409 });
  });

  it('submits forward_backward and optim_step before awaiting either; out-of-order seq ids are buffered', async () => {
    const s = await newModel();
    // seq 2 arrives before seq 1: the engine must wait for the gap to fill
    const opt = await s.optimStep({ learning_rate: 1e-2 }, { seqId: 2 });
    const fb = await s.forwardBackward(data, 'cross_entropy', { seqId: 1 });
    await Promise.all([opt.result(), fb.result()]);
    const ref = await newModel();
    await step(ref, 1);
    expect(maxAbsDiff(await forwardLogprobs(s, 3), await forwardLogprobs(ref, 3))).toBe(0);
  });

  it('chunked forward_backward (client-side chunk limit) equals the unchunked call', async () => {
    const chunked = newBackend({ maxChunkLen: 1 });
    const [c, u] = [await newModel(chunked, 5), await newModel(backend, 5)];
    const fb = await c.forwardBackward(data, 'cross_entropy', { seqId: 1 });
    expect(fb.seqIds).toBe(3);
    const opt = await c.optimStep({ learning_rate: 1e-2 }, { seqId: 4 });
    const [out] = await Promise.all([fb.result(), opt.result()]);
    const ref = await (await u.forwardBackward(data, 'cross_entropy', { seqId: 1 })).result();
    await (await u.optimStep({ learning_rate: 1e-2 }, { seqId: 2 })).result();
    expect(out.loss_fn_outputs).toHaveLength(3);
    expect(out.metrics['loss:sum']).toBeCloseTo(ref.metrics['loss:sum'], 4);
    expect(maxAbsDiff(out.loss_fn_outputs.map((o) => o.logprobs.data), ref.loss_fn_outputs.map((o) => o.logprobs.data))).toBeLessThan(1e-5);
    expect(maxAbsDiff(await forwardLogprobs(c, 5), await forwardLogprobs(u, 3))).toBeLessThan(1e-4);
  });

  it('the JSON dialect gives the same results as protobuf', async () => {
    const s = await newModel();
    const viaProto = await forwardLogprobs(s, 1);
    const json = newBackend({ encoding: 'json' });
    expect((await json.ready()).encoding).toBe('json');
    const viaJson = await forwardLogprobs(json.openTrainingSession(s.modelId), 2);
    expect(maxAbsDiff(viaJson, viaProto)).toBeLessThan(1e-6);
    const fbJson = await (await json.openTrainingSession(s.modelId).forwardBackward(data, 'cross_entropy', { seqId: 3 })).result();
    expect(fbJson.loss_fn_outputs).toHaveLength(3);
  });

  it('custom loss (−Σ w·logp with its gradient) trains exactly like cross_entropy', async () => {
    const [custom, ce] = [await newModel(backend, 3), await newModel(backend, 3)];
    const sub = await custom.forwardBackwardCustom(
      data,
      (d, lps) => ({
        loss: weightedLoss(lps, d),
        grads: d.map((x) => x.loss_fn_inputs.weights.data.map((w) => -w)),
        metrics: { 'custom:sum': 1 },
      }),
      { seqId: 1 },
    );
    expect(sub.seqIds).toBe(2);
    const out = await sub.result();
    expect(out.metrics['custom:sum']).toBe(1);
    await (await custom.optimStep({ learning_rate: 1e-2 }, { seqId: 3 })).result();
    await step(ce, 1);
    expect(maxAbsDiff(await forwardLogprobs(custom, 4), await forwardLogprobs(ce, 3))).toBeLessThan(1e-5);
  });

  it('save_state / load_state (with and without optimizer), weights_info, checkpoints, training runs', async () => {
    const s = await backend.createTrainingSession({ baseModel: MODEL, lora: { rank: 4, seed: 9 }, userMetadata: { renderer_name: 'qwen3' } });
    let seq = await step(s, 1);
    const saved = await (await s.saveState('ckpt-1', { seqId: seq++ })).result();
    expect(saved.path).toBe(`tinker://${s.modelId}/weights/ckpt-1`);
    const sampler = await (await s.saveWeightsForSampler('samp-1', { seqId: seq++ })).result();
    expect(sampler.path).toBe(`tinker://${s.modelId}/sampler_weights/samp-1`);
    const atSave = await forwardLogprobs(s, seq++);

    const info = await backend.weightsInfo(saved.path);
    expect(info).toMatchObject({ base_model: MODEL, is_lora: true, lora_rank: 4 });

    const ids = (await backend.listCheckpoints(s.modelId)).map((c) => `${c.checkpoint_type}:${c.checkpoint_id}`);
    expect(ids).toEqual(expect.arrayContaining(['training:weights/ckpt-1', 'sampler:sampler_weights/samp-1']));
    const mine = await backend.listUserCheckpoints();
    expect(mine.map((c) => c.tinker_path)).toContain(saved.path);
    const run = await backend.getTrainingRun(s.modelId);
    expect(run).toMatchObject({ training_run_id: s.modelId, base_model: MODEL });
    expect(run.user_metadata?.renderer_name).toBe('qwen3');
    expect((await backend.listTrainingRuns({ limit: 100 })).map((r) => r.training_run_id)).toContain(s.modelId);

    // Train on, then load back: weights only, then weights + optimizer.
    seq = await step(s, seq);
    expect(maxAbsDiff(await forwardLogprobs(s, seq++), atSave)).toBeGreaterThan(0);
    await (await s.loadState(saved.path, { seqId: seq++, withOptimizer: false })).result();
    expect(maxAbsDiff(await forwardLogprobs(s, seq++), atSave)).toBe(0);
    await (await s.loadState(saved.path, { seqId: seq++, withOptimizer: true })).result();
    const afterOptLoad = await step(s, seq);
    void afterOptLoad;

    // A new model from the state: continuing with the optimizer equals continuing the original.
    const { session: restored, nextSeqId } = await backend.createTrainingSessionFromState(saved.path, { withOptimizer: true });
    expect(nextSeqId).toBe(2);
    expect(maxAbsDiff(await forwardLogprobs(restored, nextSeqId), atSave)).toBe(0);
    await step(restored, nextSeqId + 1);
    expect(maxAbsDiff(await forwardLogprobs(restored, nextSeqId + 3), await forwardLogprobs(s, afterOptLoad))).toBeLessThan(1e-6);

    await backend.deleteCheckpoint(s.modelId, 'sampler_weights/samp-1');
    await backend.deleteCheckpointByPath(saved.path);
    expect(await backend.listCheckpoints(s.modelId)).toEqual([]);
    await expect(backend.weightsInfo(saved.path)).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('samples from a sampler path and a base model: seeded, with prompt logprobs and top-k; compute_logprobs matches forward', async () => {
    const s = await newModel(backend, 21);
    const seq = await step(s, 1);
    const { path } = await (await s.saveWeightsForSampler('for-sampling', { seqId: seq })).result();
    const sampler = await backend.createSamplingSession({ modelPath: path });
    expect((await backend.getSampler(sampler.samplingSessionId)).base_model).toBe(MODEL);
    const prompt = { chunks: [{ type: 'encoded_text' as const, tokens: [101, 102, 103, 104, 105] }] };
    const a = await sampler.sample(prompt, 2, { max_tokens: 6, seed: 42, temperature: 1 }, { includePromptLogprobs: true, topkPromptLogprobs: 3 });
    const b = await sampler.sample(prompt, 2, { max_tokens: 6, seed: 42, temperature: 1 });
    expect(a.sequences).toHaveLength(2);
    expect(b.sequences.map((x) => x.tokens)).toEqual(a.sequences.map((x) => x.tokens));
    // SDK 0.38's protocol: every sample has its own session-scoped id, fixed at submission.
    const ids = [...a.sequences, ...b.sequences].map((x) => x.sequence_id);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(4);
    // `stop: []` disables every stop token, EOS included: each sample runs to max_tokens.
    const noStop = await sampler.sample(prompt, 2, { max_tokens: 7, seed: 5, stop: [] });
    expect(noStop.sequences.map((x) => x.tokens.length)).toEqual([7, 7]);
    for (const sq of a.sequences) {
      expect(sq.tokens.length).toBeGreaterThan(0);
      expect(sq.tokens.length).toBeLessThanOrEqual(6);
      expect(sq.logprobs).toHaveLength(sq.tokens.length);
      if (sq.stop_reason === 'length') expect(sq.tokens).toHaveLength(6);
    }
    expect(a.prompt_logprobs).toHaveLength(5);
    expect(a.prompt_logprobs![0]).toBeNull();
    expect(a.topk_prompt_logprobs).toHaveLength(5);
    expect(a.topk_prompt_logprobs![0]).toBeNull();
    expect(a.topk_prompt_logprobs![1]).toHaveLength(3);

    // Sampler logprobs agree with the training model's forward on the same tokens.
    const lps = await sampler.computeLogprobs(prompt);
    const fwd = await forwardLogprobs(s, seq + 1, [sftDatum([101, 102, 103, 104, 105])]);
    expect(maxAbsDiff([lps.slice(1) as number[]], fwd)).toBeLessThan(1e-3);

    const base = await backend.createSamplingSession({ baseModel: MODEL });
    const g = await base.sample(prompt, 1, { max_tokens: 3, seed: 1, temperature: 0.7, top_k: 20, top_p: 0.9 });
    expect(g.sequences[0].tokens.length).toBeGreaterThan(0);
  });

  it('SDK 0.38 scoring options, in both dialects, agree with the prompt logprobs of a full forward', async () => {
    const s = await newModel(backend, 31);
    const seq = await step(s, 1);
    const { path } = await (await s.saveWeightsForSampler('scoring', { seqId: seq })).result();
    const tokens = [101, 102, 103, 104, 105, 106, 107];
    const n = tokens.length;
    const input = (t: number[]) => ({ chunks: [{ type: 'encoded_text' as const, tokens: t }] });
    for (const b of [backend, newBackend({ encoding: 'json' })]) {
      const sampler = await b.createSamplingSession({ modelPath: path });
      const full = async (t: number[]) =>
        (await sampler.sample(input(t), 1, { max_tokens: 1, seed: 0 }, { includePromptLogprobs: true, topkPromptLogprobs: 3 }));

      const out = await sampler.sample(input(tokens), 1, { max_tokens: 4, seed: 3, stop: [] }, { topkSampleLogprobs: 3 });
      const sq = out.sequences[0];
      expect(sq.topk_logprobs).toHaveLength(4);
      const whole = await full([...tokens, ...sq.tokens]);
      sq.topk_logprobs!.forEach((row, t) => {
        const expected = whole.topk_prompt_logprobs![n + t]!;
        expect(row!.map(([id]) => id)).toEqual(expected.map(([id]) => id));
        expect(maxAbsDiff([row!.map(([, v]) => v)], [expected.map(([, v]) => v)])).toBeLessThan(1e-4);
      });

      // Dense targets: the prompt's own next tokens (column 0) and nothing (-1, column 1).
      const dense = tokens.slice(1).flatMap((t) => [t, -1]);
      const target = await sampler.sample(input(tokens), 1, { max_tokens: 1, seed: 0 },
        { targetPromptLogprobs: { data: dense, dtype: 'int64', shape: [n - 1, 2] } });
      const own = (await full(tokens)).prompt_logprobs!.slice(1) as number[];
      const values = target.target_prompt_logprobs!;
      expect(values).toMatchObject({ dtype: 'float32', shape: [n - 1, 2] });
      expect(maxAbsDiff([values.data.filter((_, i) => i % 2 === 0)], [own])).toBeLessThan(1e-4);
      expect(values.data.filter((_, i) => i % 2 === 1).every((v) => v === 0)).toBe(true);

      // Sparse targets keep their layout: row 2 asks for token 640 (scored at prompt position 3).
      const crow = [0, 0, 0, ...Array(n - 3).fill(1)];
      const sparse = await sampler.sample(input(tokens), 1, { max_tokens: 1, seed: 0 }, {
        targetPromptLogprobs: { data: [640], dtype: 'int64', shape: [n - 1, 1], sparse_crow_indices: crow, sparse_col_indices: [0] },
      });
      expect(sparse.target_prompt_logprobs).toMatchObject({ shape: [n - 1, 1], sparse_crow_indices: crow, sparse_col_indices: [0] });
      const swapped = (await full([...tokens.slice(0, 3), 640, ...tokens.slice(4)])).prompt_logprobs![3]!;
      expect(Math.abs(sparse.target_prompt_logprobs!.data[0] - swapped)).toBeLessThan(1e-4);

      // Alternatives drawn at every prompt position, each with the model's logprob of it.
      const alt = (await sampler.sample(input(tokens), 1, { max_tokens: 1, seed: 8 }, { promptAltTokensK: 2 })).prompt_alt_tokens!;
      expect(alt.tokens).toMatchObject({ dtype: 'int64', shape: [n - 1, 2] });
      const at = 4; // row 4: alternative to prompt[5]
      const altSwapped = (await full([...tokens.slice(0, at + 1), alt.tokens.data[2 * at], ...tokens.slice(at + 2)])).prompt_logprobs!;
      expect(Math.abs(alt.logprobs.data[2 * at] - altSwapped[at + 1]!)).toBeLessThan(1e-4);

      const lastN = await sampler.computeLogprobs(input(tokens), 2);
      expect(lastN.slice(0, n - 2).every((v) => v === null)).toBe(true);
      expect(maxAbsDiff([lastN.slice(n - 2) as number[]], [own.slice(n - 3)])).toBeLessThan(1e-4);
      const lastThree = await sampler.sample(input(tokens), 1, { max_tokens: 1, seed: 0 }, { includePromptLogprobs: true, promptLogprobsLastN: 3 });
      expect(lastThree.prompt_logprobs!.filter((v) => v !== null)).toHaveLength(3);
    }
  });

  it('SDK 0.38 optimizers: get_info names adamw; Dimuon (config or params) is refused by name, not trained with Adam', async () => {
    const s = await newModel();
    expect((await s.getInfo()).optimizer_config).toEqual({ type: 'adamw' });
    const err = await backend.createTrainingSession({ baseModel: MODEL, lora: { rank: 4 }, optimizer: { type: 'dimuon', version: 1 } }).catch((e) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect(err).toMatchObject({ kind: 'bad_request' });
    expect(String(err.message)).toMatch(/dimuon.*not served/);
    const params = await s
      .optimStep({ type: 'dimuon', learning_rate: 1e-3 }, { seqId: 1 })
      .then((sub) => sub.result())
      .catch((e) => e);
    expect(params).toMatchObject({ kind: 'bad_request' });
    expect(String(params.message)).toMatch(/optimizer_params of type 'dimuon'/);
    expect(await step(s, 2)).toBe(4); // the refused step consumed seq id 1; the model trains on
  });

  it('ephemeral sampler from save_weights_and_get_sampling_client', async () => {
    const s = await newModel(backend, 4);
    const seq = await step(s, 1);
    const sub = await s.saveWeightsAndGetSamplingSession({ seqId: seq });
    expect(sub.seqIds).toBe(1);
    const sampler = await sub.result();
    const r = await sampler.sample({ chunks: [{ type: 'encoded_text', tokens: [7, 8, 9] }] }, 1, { max_tokens: 2, seed: 3 });
    expect(r.sequences[0].tokens.length).toBeGreaterThan(0);
  });

  it('errors carry the engine detail: bad input → bad_request, unknown model → not_found', async () => {
    const s = await newModel();
    const bad = sftDatum([1, 2, 3]);
    bad.loss_fn_inputs.weights = { data: [1], dtype: 'float32', shape: [1] };
    const err = await s
      .forwardBackward([bad], 'cross_entropy', { seqId: 1 })
      .then((sub) => sub.result())
      .catch((e) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect(err.kind).toBe('bad_request');
    expect(String(err.message).length).toBeGreaterThan(20);
    await expect(backend.openTrainingSession('nope:train:0').optimStep({ learning_rate: 1 }, { seqId: 1 })).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('unload_model makes the model unknown', async () => {
    const s = await newModel();
    await backend.unloadModel(s.modelId);
    const err = await s
      .optimStep({ learning_rate: 1 }, { seqId: 1 })
      .then((sub) => sub.result())
      .catch((e) => e);
    expect(err).toMatchObject({ kind: 'not_found' });
  });

  it('after an engine restart the model is not_found and is recreated from its saved state', async () => {
    const s = await newModel(backend, 13);
    let seq = await step(s, 1);
    const { path } = await (await s.saveState('before-restart', { seqId: seq++ })).result();
    const atSave = await forwardLogprobs(s, seq++);
    await engine.restart();
    const err = await s
      .forward(data, 'cross_entropy', { seqId: seq })
      .then((sub) => sub.result())
      .catch((e) => e);
    expect(err).toMatchObject({ kind: 'not_found' });
    const { session, nextSeqId } = await backend.createTrainingSessionFromState(path, { withOptimizer: true });
    expect(maxAbsDiff(await forwardLogprobs(session, nextSeqId), atSave)).toBe(0);
  });
});
