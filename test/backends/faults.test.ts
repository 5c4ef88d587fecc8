// Faults the real engine cannot be made to produce, against the in-process fake server. The
// invariant under every fault: each (model, seq) is executed by the server exactly once.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BackendError } from '../../src/backends/types.js';
import { backendFor, FAST_RETRY, sftDatum } from './helpers.js';
import { FakeTinkerServer, startFakeServer } from './fake-server.js';

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
async function model(opts: Parameters<typeof backendFor>[1] = {}) {
  const b = backend(opts);
  return { b, s: await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } }) };
}
function expectExactlyOnce() {
  for (const [key, n] of server.appliedCounts()) expect(n, key).toBe(1);
}
const FB = '/api/v1/forward_backward';
const RF = '/api/v1/retrieve_future';

describe('submit retries are deduplicated by (model, seq)', () => {
  it('5xx burst on forward_backward: retried with the same bytes, applied once', async () => {
    const { s } = await model();
    server.fault({ path: FB, times: 3, action: { status: 503, body: { detail: 'overloaded' } } });
    const fb = await s.forwardBackward([sftDatum([1, 2, 3])], 'cross_entropy', { seqId: 1 });
    await fb.result();
    const reqs = server.requestsTo(FB);
    expect(reqs).toHaveLength(4);
    expect(new Set(reqs.map((r) => r.raw.toString('hex'))).size).toBe(1);
    expect(new Set(reqs.map((r) => r.headers['x-idempotency-key'])).size).toBe(1);
    expect(server.applied.filter((a) => a.op === 'fb')).toHaveLength(1);
  });

  it('connection dropped AFTER the server applied the request: the resend is deduplicated', async () => {
    const { s } = await model();
    server.fault({ path: FB, times: 2, action: { drop: 'after' } });
    server.fault({ path: '/api/v1/optim_step', times: 1, action: { drop: 'after' } });
    const fb = await s.forwardBackward([sftDatum([1, 2, 3])], 'cross_entropy', { seqId: 1 });
    const opt = await s.optimStep({ learning_rate: 0.1 }, { seqId: 2 });
    await Promise.all([fb.result(), opt.result()]);
    expect(server.requestsTo(FB)).toHaveLength(3);
    expect(server.requestsTo('/api/v1/optim_step')).toHaveLength(2);
    expect(server.applied.map((a) => [a.seq, a.op])).toEqual([
      [0, 'create_model'],
      [1, 'fb'],
      [2, 'optim_step'],
    ]);
    expect(server.modelSteps(s.modelId)).toBe(1);
  });

  it('connection dropped BEFORE processing, and 409 without a JSON body, are retried', async () => {
    const { s } = await model();
    server.fault({ path: '/api/v1/optim_step', times: 1, action: { drop: 'before' } });
    server.fault({ path: '/api/v1/optim_step', times: 2, action: { status: 409 } });
    await (await s.optimStep({ learning_rate: 0.1 }, { seqId: 1 })).result();
    expect(server.requestsTo('/api/v1/optim_step')).toHaveLength(4);
    expectExactlyOnce();
  });

  it('429 with Retry-After is honoured', async () => {
    const { s } = await model();
    server.fault({ path: '/api/v1/save_weights', times: 1, action: { status: 429, body: { detail: 'slow down' }, headers: { 'retry-after-ms': '300' } } });
    const t0 = Date.now();
    await (await s.saveState('a', { seqId: 1 })).result();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    server.fault({ path: '/api/v1/save_weights', times: 1, action: { status: 429, body: {}, headers: { 'retry-after': '1' } } });
    const t1 = Date.now();
    await (await s.saveState('b', { seqId: 2 })).result();
    expect(Date.now() - t1).toBeGreaterThanOrEqual(990);
  });

  it('a persistent 5xx gives up after the retry budget with the server detail', async () => {
    const { s } = await model({ retry: { ...FAST_RETRY, budgetMs: 300 } });
    server.fault({ path: FB, times: 1000, action: { status: 502, body: { detail: 'bad gateway' } } });
    const err = await s.forwardBackward([sftDatum([1, 2])], 'cross_entropy', { seqId: 1 }).catch((e) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect(err).toMatchObject({ status: 502, kind: 'server', detail: 'bad gateway', requestType: 'forward_backward' });
    expect(server.requestsTo(FB).length).toBeGreaterThan(2);
  });

  it('x-should-retry: false stops retries; a connection refused surfaces as transport', async () => {
    const { b, s } = await model({ retry: { ...FAST_RETRY, budgetMs: 200 } });
    server.fault({ path: '/api/v1/optim_step', times: 1, action: { status: 503, body: { detail: 'no' }, headers: { 'x-should-retry': 'false' } } });
    await expect(s.optimStep({ learning_rate: 1 }, { seqId: 1 })).rejects.toMatchObject({ status: 503 });
    expect(server.requestsTo('/api/v1/optim_step')).toHaveLength(1);
    await server.stop();
    await expect(b.capabilities()).rejects.toMatchObject({ kind: 'transport', status: undefined });
  });
});

describe('non-retryable statuses fail at once with status, request type and detail', () => {
  const cases: Array<[number, string]> = [
    [400, 'bad_request'],
    [401, 'auth'],
    [403, 'auth'],
    [404, 'not_found'],
    [422, 'bad_request'],
  ];
  for (const [status, kind] of cases) {
    it(`${status} → ${kind}`, async () => {
      // Protobuf set, not on trial: a first body refused with a 400/422 would otherwise be resent as
      // JSON (dialect.test.ts).
      const { s } = await model({ encoding: 'protobuf' });
      server.fault({ path: FB, times: 1, action: { status, body: { detail: `nope ${status}` } } });
      const err = await s.forwardBackward([sftDatum([1, 2])], 'cross_entropy', { seqId: 1 }).catch((e) => e);
      expect(err).toMatchObject({ status, kind, detail: `nope ${status}`, requestType: 'forward_backward' });
      expect(err.message).toContain(`nope ${status}`);
      expect(server.requestsTo(FB)).toHaveLength(1);
    });
  }

  it('a 404 for an unknown model → not_found (the signal to restore from checkpoint)', async () => {
    const s = backend().openTrainingSession('ghost:train:0');
    await expect(s.optimStep({ learning_rate: 1 }, { seqId: 1 })).rejects.toMatchObject({ kind: 'not_found', status: 404 });
  });
});

describe('409 conflicts', () => {
  it('a reused seq id with a different payload is a definitive conflict, not retried', async () => {
    const { s } = await model();
    await (await s.forwardBackward([sftDatum([1, 2, 3])], 'cross_entropy', { seqId: 1 })).result();
    const before = server.requestsTo(FB).length;
    const err = await s.forwardBackward([sftDatum([9, 9, 9])], 'cross_entropy', { seqId: 1 }).catch((e) => e);
    expect(err).toMatchObject({ kind: 'conflict', status: 409 });
    expect(String(err.detail)).toMatch(/different payload/);
    expect(server.requestsTo(FB).length - before).toBe(1);
    expectExactlyOnce();
  });

  it('the same logical call resent later (an activity retry, even from a new process) is deduplicated', async () => {
    const { s } = await model();
    const data = [sftDatum([4, 5, 6]), sftDatum([7, 8])];
    const first = await (await s.forwardBackward(data, 'cross_entropy', { seqId: 1 })).result();
    const other = backend(); // a different client instance, same model id
    const again = await (await other.openTrainingSession(s.modelId).forwardBackward(structuredClone(data), 'cross_entropy', { seqId: 1 })).result();
    expect(again).toEqual(first);
    expect(server.applied.filter((a) => a.op === 'fb')).toHaveLength(1);
  });
});

describe('retrieve_future outcome table (§4.2)', () => {
  it('survives a 408 storm, try_again replies, 5xx bursts and dropped polls', async () => {
    const { s } = await model();
    server.fault({ path: RF, times: 25, action: { status: 408, body: { type: 'try_again', request_id: 'x', queue_state: 'paused_capacity' } } });
    server.fault({ path: RF, times: 5, action: { status: 200, body: { type: 'try_again', request_id: 'x', queue_state: 'active' } } });
    server.fault({ path: RF, times: 4, action: { status: 500, body: { detail: 'boom' } } });
    server.fault({ path: RF, times: 3, action: { drop: 'before' } });
    server.fault({ path: RF, times: 2, action: { status: 429, body: {}, headers: { 'retry-after-ms': '20' } } });
    const out = await (await s.forwardBackward([sftDatum([1, 2, 3])], 'cross_entropy', { seqId: 1 })).result();
    expect(out.loss_fn_outputs).toHaveLength(1);
    const polls = server.requestsTo(RF).filter((r) => r.headers['x-tinker-request-type'] === 'ForwardBackward');
    expect(polls.length).toBeGreaterThanOrEqual(25 + 5 + 4 + 3 + 2 + 1);
    expect(polls.map((r) => Number(r.headers['x-tinker-request-iteration']))).toEqual(polls.map((_, i) => i));
    expectExactlyOnce();
  });

  it('slow futures (server answers 408 until ready) complete', async () => {
    await server.stop();
    server = await startFakeServer({ futureDelayMs: 400, notReadyStatus: 408, longPollMs: 30 });
    const { s } = await model();
    const t0 = Date.now();
    await (await s.optimStep({ learning_rate: 1 }, { seqId: 1 })).result();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(390);
    expect(server.requestsTo(RF).length).toBeGreaterThan(3);
  });

  it('a failed future carries the server error and category', async () => {
    const { s } = await model();
    server.fault({ path: RF, times: 1, action: { status: 200, body: { error: 'target_tokens length 3 != model_input length 4', category: 'user' } } });
    const err = await (await s.forwardBackward([sftDatum([1, 2])], 'cross_entropy', { seqId: 1 })).result().catch((e) => e);
    expect(err).toMatchObject({ kind: 'bad_request', status: 200, requestType: 'ForwardBackward' });
    expect(err.message).toContain('target_tokens length 3');
    server.fault({ path: RF, times: 1, action: { status: 200, body: { error: 'oom', category: 'server' } } });
    await expect((await s.optimStep({ learning_rate: 1 }, { seqId: 2 })).result()).rejects.toMatchObject({ kind: 'server' });
  });

  it('a future the server no longer knows (404, e.g. after a restart) expires like a 410', async () => {
    const { s } = await model();
    server.fault({ path: RF, times: 1, action: { status: 404, body: { detail: "unknown or expired request_id 'x'" } } });
    await expect((await s.optimStep({ learning_rate: 1 }, { seqId: 1 })).result()).rejects.toMatchObject({ kind: 'expired', status: 404 });
    await (await s.optimStep({ learning_rate: 1 }, { seqId: 1 })).result();
    expectExactlyOnce();
  });

  it('410 expires a training future; a sample is resubmitted under a new seq id', async () => {
    const { b, s } = await model();
    server.fault({ path: RF, times: 1, action: { status: 410, body: { detail: 'promise expired' } } });
    await expect((await s.optimStep({ learning_rate: 1 }, { seqId: 1 })).result()).rejects.toMatchObject({ kind: 'expired', status: 410 });
    // Resubmitting the same seq id is deduplicated and yields the original result.
    await (await s.optimStep({ learning_rate: 1 }, { seqId: 1 })).result();
    expectExactlyOnce();

    const sampler = await b.createSamplingSession({ baseModel: 'tiny-qwen3' });
    server.fault({ path: RF, times: 1, action: { status: 410, body: { detail: 'gone' } } });
    const r = await sampler.sample({ chunks: [{ type: 'encoded_text', tokens: [1] }] }, 1, { max_tokens: 1 });
    expect(r.sequences).toHaveLength(1);
    expect(server.requestsTo('/api/v1/asample').map((q) => q.json.seq_id)).toEqual([0, 1]);
  });

  it('a bodiless 400 is re-polled at most 3 times; another 4xx is fatal', async () => {
    const { s } = await model();
    server.fault({ path: RF, times: 3, action: { status: 400 } });
    await (await s.optimStep({ learning_rate: 1 }, { seqId: 1 })).result();
    server.fault({ path: RF, times: 1, action: { status: 422, body: { detail: 'unprocessable' } } });
    await expect((await s.optimStep({ learning_rate: 1 }, { seqId: 2 })).result()).rejects.toMatchObject({ kind: 'bad_request', status: 422 });
  });

  it('futureTimeoutMs bounds the wait', async () => {
    const { s } = await model({ futureTimeoutMs: 200 });
    server.opts.futureDelayMs = 5_000;
    await expect((await s.optimStep({ learning_rate: 1 }, { seqId: 1 })).result()).rejects.toMatchObject({ kind: 'timeout' });
  });

  it('close() aborts a pending poll', async () => {
    const { b, s } = await model();
    server.opts.futureDelayMs = 5_000;
    server.opts.longPollMs = 1_000;
    const pending = (await s.optimStep({ learning_rate: 1 }, { seqId: 1 })).result();
    setTimeout(() => void b.close(), 50);
    await expect(pending).rejects.toThrow(/closed/);
  });
});

describe('sampling backpressure', () => {
  it('429 on asample backs off and resubmits the same seq id', async () => {
    const b = backend();
    const sampler = await b.createSamplingSession({ baseModel: 'tiny-qwen3' });
    server.fault({ path: '/api/v1/asample', times: 3, action: { status: 429, body: { detail: 'busy' } } });
    await sampler.sample({ chunks: [{ type: 'encoded_text', tokens: [1, 2] }] }, 1, { max_tokens: 2, seed: 1 });
    expect(server.requestsTo('/api/v1/asample').map((r) => r.json.seq_id)).toEqual([0, 0, 0, 0]);
  });
});

describe('exactly-once under a fault storm', () => {
  it('a training loop with random faults on every endpoint, each step retried as a whole, applies each seq once', async () => {
    const { s } = await model({ retry: { ...FAST_RETRY, budgetMs: 150 } });
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const actions = [
      { status: 503, body: { detail: 'x' } },
      { status: 408, body: {} },
      { drop: 'after' as const },
      { drop: 'before' as const },
      { status: 500, body: { detail: 'y' } },
    ];
    for (const path of [FB, '/api/v1/optim_step', RF, '/api/v1/save_weights']) {
      for (let i = 0; i < 12; i++) server.fault({ path, times: 1, action: actions[Math.floor(rand() * actions.length)], when: () => rand() < 0.5 });
    }
    const steps = 6;
    let seq = 1;
    for (let step = 0; step < steps; step++) {
      const data = [sftDatum([step, step + 1, step + 2]), sftDatum([step + 3, step + 4])];
      // One "activity" = the whole step; on failure it is retried with the same first seq id.
      for (let attempt = 0; ; attempt++) {
        try {
          const fb = await s.forwardBackward(data, 'cross_entropy', { seqId: seq });
          const opt = await s.optimStep({ learning_rate: 0.01 }, { seqId: seq + fb.seqIds });
          await Promise.all([fb.result(), opt.result()]);
          if (step % 3 === 2) await (await s.saveState(`step-${step}`, { seqId: seq + fb.seqIds + 1 })).result();
          seq += fb.seqIds + 1 + (step % 3 === 2 ? 1 : 0);
          break;
        } catch (err) {
          if (attempt > 20) throw err;
        }
      }
    }
    expectExactlyOnce();
    const seqs = server.applied.filter((a) => a.model === s.modelId).map((a) => a.seq);
    expect(seqs).toEqual(Array.from({ length: seq }, (_, i) => i));
    expect(server.modelSteps(s.modelId)).toBe(steps);
  });
});
