import { afterEach, describe, expect, it } from 'vitest';
import type { CustomLossFn, Datum } from '../../src/backends/types.js';
import { withLossMetrics } from '../../src/backends/custom-loss.js';
import { backendFor, sftDatum } from './helpers.js';
import { fakeLogprob, type FakeTinkerServer, startFakeServer } from './fake-server.js';

let server: FakeTinkerServer | undefined;
afterEach(async () => {
  await server?.stop();
});

describe('forwardBackwardCustom (§9.8) against the fake server', () => {
  it('forward → loss/grad in TS → forward_backward(cross_entropy, weights = −grad), consuming the ids of both', async () => {
    server = await startFakeServer({ clientConfig: { fwdbwd_max_chunk_len: 2 } });
    const b = backendFor(server.baseUrl);
    try {
      const s = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
      const data: Datum[] = [sftDatum([1, 2, 3]), sftDatum([4, 5]), sftDatum([6, 7, 8, 9])];
      // a client-only key: visible to the loss, never sent to the server
      data[0].loss_fn_inputs.mask = { data: [1, 0], dtype: 'float32' };
      delete (data[1].loss_fn_inputs as Record<string, unknown>).weights;
      let seen: number[][] = [];
      const loss: CustomLossFn = (d, logprobs) => {
        expect(d).toBe(data);
        seen = logprobs;
        // C = Σ_d c_d · Σ_i logp_di with c_d = d+1 ⇒ dC/dlogp_di = d+1
        const c = logprobs.map((_, i) => i + 1);
        return {
          loss: logprobs.reduce((acc, lp, i) => acc + c[i] * lp.reduce((a, x) => a + x, 0), 0),
          grads: logprobs.map((lp, i) => lp.map(() => c[i])),
          metrics: { 'dpo_acc:mean': 0.75 },
        };
      };
      const sub = await s.forwardBackwardCustom(data, loss, { seqId: 1 });
      expect(sub.seqIds).toBe(4); // 2 forward chunks + 2 forward_backward chunks
      const out = await sub.result();

      const reqs = server.requestsTo('/api/v1/forward_backward').map((r) => r.proto!);
      const fwd = reqs.filter((r) => r.forwardOnly);
      const fb = reqs.filter((r) => !r.forwardOnly);
      expect(fwd.map((r) => r.seqId).sort()).toEqual([1, 2]);
      expect(fb.map((r) => r.seqId).sort()).toEqual([3, 4]);
      const sentFb = fb.sort((a, b) => a.seqId - b.seqId).flatMap((r) => r.data);
      const sentFwd = fwd.sort((a, b) => a.seqId - b.seqId).flatMap((r) => r.data);
      for (const r of [...sentFb, ...sentFwd]) expect(Object.keys(r.loss_fn_inputs).sort()).toEqual(['target_tokens', 'weights']);
      // SDK behaviour: missing weights become zeros for the forward
      expect(sentFwd[1].loss_fn_inputs.weights.data).toEqual([0]);
      expect(sentFb.map((d) => d.loss_fn_inputs.weights.data)).toEqual([[-1, -1], [-2], [-3, -3, -3]]);
      expect(seen).toEqual(data.map((d) => d.loss_fn_inputs.target_tokens.data.map((t) => Math.fround(fakeLogprob(t, 0)))));
      expect(out.metrics['dpo_acc:mean']).toBe(0.75);
      expect(out.metrics['loss:sum']).toBeCloseTo(seen.reduce((acc, lp, i) => acc + (i + 1) * lp.reduce((a, x) => a + x, 0), 0), 6);
      // The server's loss of the linear surrogate −Σ w·logp with w = −dC/dlogp (= C here, C being linear).
      expect(out.metrics['surrogate_loss:sum']).toBeCloseTo(out.metrics['loss:sum'], 5);
      expect(out.loss_fn_outputs).toHaveLength(3);

      // An optim_step right after is ordered behind both calls.
      await (await s.optimStep({ learning_rate: 1e-3 }, { seqId: 1 + sub.seqIds })).result();
      expect(server.applied.map((a) => a.op)).toEqual(['create_model', 'forward', 'forward', 'fb', 'fb', 'optim_step']);
    } finally {
      await b.close();
    }
  });

  it('rejects gradients of the wrong length or non-finite values before the forward_backward', async () => {
    server = await startFakeServer();
    const b = backendFor(server.baseUrl);
    try {
      const s = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
      await expect(
        s.forwardBackwardCustom([sftDatum([1, 2, 3])], (_d, lp) => ({ loss: 0, grads: lp.map(() => [1]), metrics: {} }), { seqId: 1 }),
      ).rejects.toMatchObject({ kind: 'bad_request' });
      await expect(
        s.forwardBackwardCustom([sftDatum([1, 2])], (_d, lp) => ({ loss: 0, grads: lp.map((x) => x.map(() => NaN)), metrics: {} }), { seqId: 2 }),
      ).rejects.toThrow(/non-finite/);
      expect(server.requestsTo('/api/v1/forward_backward').every((r) => r.proto!.forwardOnly)).toBe(true);
    } finally {
      await b.close();
    }
  });
});

describe('withLossMetrics', () => {
  it("merges as SDK 0.38: the loss function's metrics, its loss as loss:sum (over a same-named metric), the server's loss as surrogate_loss:sum", () => {
    const server = { loss_fn_outputs: [], loss_fn_output_type: 'x', metrics: { 'loss:sum': 2, 'clock_cycle:unique': 7 } };
    expect(withLossMetrics(server, { 'dpo_loss': 0.5, 'loss:sum': 5 }).metrics).toEqual({ 'clock_cycle:unique': 7, dpo_loss: 0.5, 'loss:sum': 5, 'surrogate_loss:sum': 2 });
  });
});
