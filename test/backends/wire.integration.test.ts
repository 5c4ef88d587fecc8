// The wire switch and the JSON fallback against the REAL engine over HTTP, started with its test
// switch --refuse-protobuf: it offers protobuf in client/config and answers every protobuf body with a
// plain 500, as hatchery-core does. The client's default falls back to JSON on the first refusal and
// trains exactly as a client forced to JSON does; forced protobuf surfaces the 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forgetServerDialects } from '../../src/backends/config.js';
import { createTinkerBackend, type TinkerBackend } from '../../src/backends/tinker-backend.js';
import { BackendError, type TrainingSession } from '../../src/backends/types.js';
import { type EngineHandle, startEngine } from '../support/engine.js';
import { sftDatum } from './helpers.js';

let engine: EngineHandle;
const backends: TinkerBackend[] = [];
function client(env: Record<string, string> = {}, retry = {}): TinkerBackend {
  const b = createTinkerBackend({ baseUrl: engine.baseUrl, apiKey: 'tml-wire', env, retry });
  backends.push(b);
  return b;
}

const data = [sftDatum([101, 102, 103, 104, 105]), sftDatum([201, 202, 203, 204], [0, 1, 1])];

/** The Content-Type of every forward_backward body the client sends while `work` runs. */
async function bodiesSent(work: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (url: string | URL | Request, init?: RequestInit) => {
    const path = String(url).replace(engine.baseUrl, '');
    if (/\/api\/v1\/forward(_backward)?$/.test(path)) seen.push(`${path.replace('/api/v1/', '')} ${((init?.headers ?? {}) as Record<string, string>)['Content-Type']}`);
    return realFetch(url, init);
  }) as typeof fetch;
  try {
    await work();
  } finally {
    globalThis.fetch = realFetch;
  }
  return seen;
}

async function trainOneStep(b: TinkerBackend): Promise<{ session: TrainingSession; logprobs: number[][] }> {
  const session = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4, seed: 11 } });
  const fb = await session.forwardBackward(data, 'cross_entropy', { seqId: 1 });
  const opt = await session.optimStep({ learning_rate: 1e-2 }, { seqId: 2 });
  await Promise.all([fb.result(), opt.result()]);
  const out = await (await session.forward(data, 'cross_entropy', { seqId: 3 })).result();
  return { session, logprobs: out.loss_fn_outputs.map((o) => o.logprobs.data) };
}

describe('the wire against an engine that refuses protobuf bodies', () => {
  beforeAll(async () => {
    engine = await startEngine({ extraArgs: ['--refuse-protobuf'] });
  }, 45 * 60_000);

  afterAll(async () => {
    await Promise.all(backends.map((b) => b.close()));
    await engine?.stop();
    forgetServerDialects();
  });

  it('TINKER_WIRE=json: no protobuf body is ever sent', async () => {
    let forced: number[][] = [];
    const sent = await bodiesSent(async () => {
      forced = (await trainOneStep(client({ TINKER_WIRE: 'json' }))).logprobs;
    });
    expect(sent).toEqual(['forward_backward application/json', 'forward application/json']);
    expect(forced.flat().every(Number.isFinite)).toBe(true);
  });

  it('TINKER_WIRE=proto: the refusal surfaces (an ordinary 5xx, retried as protobuf), no JSON is sent', async () => {
    const b = client({ TINKER_WIRE: 'proto' }, { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 2 });
    let err: unknown;
    const sent = await bodiesSent(async () => {
      const s = await b.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4 } });
      err = await s.forwardBackward(data, 'cross_entropy', { seqId: 1 }).catch((e: unknown) => e);
    });
    expect(err).toBeInstanceOf(BackendError);
    expect((err as BackendError).message).toMatch(/HTTP 500: Internal Server Error/);
    expect(sent).toEqual(['forward_backward application/x-protobuf', 'forward_backward application/x-protobuf']);
  });

  it('default: the first protobuf body refused, the step goes as JSON (once) and trains as forced JSON does; later clients start in JSON', async () => {
    forgetServerDialects();
    const reference = await trainOneStep(client({ TINKER_WIRE: 'json' }));
    const b = client();
    expect((await b.ready()).encoding).toBe('protobuf');
    let fallback: number[][] = [];
    const sent = await bodiesSent(async () => {
      fallback = (await trainOneStep(b)).logprobs;
    });
    expect(sent).toEqual(['forward_backward application/x-protobuf', 'forward_backward application/json', 'forward application/json']);
    // One forward_backward applied (twice would double the gradient): the same weights as forced JSON's.
    expect(fallback).toEqual(reference.logprobs);
    expect((await client().ready()).encoding).toBe('json');
  });
});
