// The sampler pool's routing on in-process engines (edge cases: the real engines are in
// test/workflows/sampler-pool.test.ts): spreading, the per-engine bound, failover of a request to
// another engine, an engine's return, weights imported once per engine, errors that are the
// request's own.
import { describe, expect, it } from 'vitest';
import { SamplerPool, type PoolEngine, type WeightsSource } from '../../src/backends/sampler-pool.js';
import { BackendError, type ModelInput, type SampleResponse, type SamplingSession } from '../../src/backends/types.js';

const TRAINER = 'http://trainer:1';
const PATH = 'tinker://run-1/sampler_weights/sampler_000001';
const prompt: ModelInput = { chunks: [{ type: 'encoded_text', tokens: [1, 2, 3] }] } as unknown as ModelInput;

class FakeEngine implements PoolEngine {
  inFlight = 0;
  maxSeen = 0;
  served = 0;
  /** Sample requests received, answered or not. */
  asked = 0;
  imports: string[] = [];
  sessions = 0;
  down = false;
  /** Checkpoints this engine holds. */
  held = new Set<string>();
  /** The next n requests answer "unknown sampling session". */
  forget = 0;
  /** Requests are refused as bad input. */
  refuse = false;

  constructor(
    readonly baseUrl: string,
    private readonly delayMs = 5,
  ) {}

  private check(requestType: string): void {
    if (this.down) throw new BackendError(`Tinker ${requestType} failed: connection error (ECONNREFUSED)`, undefined, requestType, undefined, 'transport');
  }

  async createSamplingSession(source: { modelPath: string } | { baseModel: string }): Promise<SamplingSession> {
    this.check('create_sampling_session');
    if ('modelPath' in source && !this.held.has(source.modelPath)) {
      throw new BackendError(`unknown checkpoint ${source.modelPath}`, 404, 'create_sampling_session', undefined, 'not_found');
    }
    this.sessions += 1;
    const sample = async (_p: ModelInput, n: number, params: { seed?: number }): Promise<SampleResponse> => {
      this.asked += 1;
      this.check('asample');
      if (this.refuse) throw new BackendError('bad prompt', 400, 'Sample', undefined, 'bad_request');
      if (this.forget > 0) {
        this.forget -= 1;
        throw new BackendError('unknown sampling session', 404, 'Sample', undefined, 'not_found');
      }
      this.inFlight += 1;
      this.maxSeen = Math.max(this.maxSeen, this.inFlight);
      await new Promise((r) => setTimeout(r, this.delayMs));
      this.inFlight -= 1;
      this.check('asample');
      this.served += 1;
      // What a seeded engine answers: a function of the request alone.
      return { sequences: Array.from({ length: n }, (_, i) => ({ tokens: [params.seed ?? 0, i], logprobs: [-1, -2], stop_reason: 'length' })) } as unknown as SampleResponse;
    };
    return { samplingSessionId: `${this.baseUrl}:s${this.sessions}`, sample, computeLogprobs: async () => [null, -1] } as unknown as SamplingSession;
  }

  async weightsInfo(path: string): Promise<unknown> {
    this.check('weights_info');
    if (!this.held.has(path)) throw new BackendError('not found', 404, 'weights_info', undefined, 'not_found');
    return { base_model: 'tiny' };
  }

  async importCheckpoint(path: string, tar: Buffer): Promise<{ imported: boolean }> {
    this.check('import_checkpoint');
    expect(tar.toString()).toBe(`tar of ${path}`);
    this.imports.push(path);
    this.held.add(path);
    return { imported: true };
  }
}

function source(): WeightsSource & { downloads: string[] } {
  const downloads: string[] = [];
  return { baseUrl: TRAINER, downloads, checkpointArchive: async (path) => (downloads.push(path), Buffer.from(`tar of ${path}`)) };
}

const opts = { maxInFlight: 2, retryAfterMs: 200, budgetMs: 2_000 };
const ask = (s: SamplingSession, seed: number) => s.sample(prompt, 2, { max_tokens: 4, seed });

describe('sampler pool', () => {
  it('spreads requests over the engines, at most max_in_flight at once on each, and answers as one engine would', async () => {
    const trainer = new FakeEngine(TRAINER);
    trainer.held.add(PATH);
    const engines = [trainer, new FakeEngine('http://a:1'), new FakeEngine('http://b:1')];
    const pool = new SamplerPool(source(), engines, opts);
    const session = await pool.createSamplingSession({ modelPath: PATH });
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => ask(session, i)));
    expect(answers.map((a) => a.sequences[0].tokens[0])).toEqual(Array.from({ length: 30 }, (_, i) => i));
    for (const e of engines) {
      expect(e.served).toBeGreaterThanOrEqual(8);
      expect(e.maxSeen).toBeLessThanOrEqual(2);
    }
    expect(Object.values(pool.served).reduce((a, b) => a + b, 0)).toBe(30);
  });

  it('imports a checkpoint into every engine but the trainer, once, from one download, before the session is returned', async () => {
    const trainer = new FakeEngine(`${TRAINER}/`);
    trainer.held.add(PATH);
    const [a, b] = [new FakeEngine('http://a:1'), new FakeEngine('http://b:1')];
    const src = source();
    const pool = new SamplerPool(src, [trainer, a, b], opts);
    await Promise.all([pool.createSamplingSession({ modelPath: PATH }), pool.createSamplingSession({ modelPath: PATH })]);
    expect(a.imports).toEqual([PATH]);
    expect(b.imports).toEqual([PATH]);
    expect(trainer.imports).toEqual([]);
    expect(src.downloads).toEqual([PATH]);
    // An engine that already holds the checkpoint is not sent it again.
    const next = 'tinker://run-1/sampler_weights/sampler_000002';
    b.held.add(next);
    trainer.held.add(next);
    await pool.createSamplingSession({ modelPath: next });
    expect(a.imports).toEqual([PATH, next]);
    expect(b.imports).toEqual([PATH]);
  });

  it('sends a request lost with its engine to another one, leaves the engine out, and takes it back when it answers again', async () => {
    const [a, b] = [new FakeEngine('http://a:1', 20), new FakeEngine('http://b:1', 20)];
    const events: string[] = [];
    const pool = new SamplerPool(source(), [a, b], { ...opts, onEvent: (e) => events.push(`${e.type} ${e.engine}`) });
    const session = await pool.createSamplingSession({ baseModel: 'tiny' });
    const first = Promise.all(Array.from({ length: 4 }, (_, i) => ask(session, i)));
    await new Promise((r) => setTimeout(r, 5));
    a.down = true; // mid-request: its two in flight fail when they finish
    expect((await first).map((r) => r.sequences[0].tokens[0])).toEqual([0, 1, 2, 3]);
    expect(events).toContain('down http://a:1');
    const servedBefore = a.served;
    await Promise.all(Array.from({ length: 4 }, (_, i) => ask(session, i)));
    expect(a.served).toBe(servedBefore);
    a.down = false;
    await new Promise((r) => setTimeout(r, 250));
    await Promise.all(Array.from({ length: 8 }, (_, i) => ask(session, i)));
    expect(a.served).toBeGreaterThan(servedBefore);
    expect(events).toContain('up http://a:1');
  });

  it('reopens a session an engine forgot, and fails a request only when every engine stays down past the budget', async () => {
    const a = new FakeEngine('http://a:1');
    const pool = new SamplerPool(source(), [a], { ...opts, budgetMs: 300, retryAfterMs: 50 });
    const session = await pool.createSamplingSession({ baseModel: 'tiny' });
    a.forget = 1;
    expect((await ask(session, 7)).sequences[0].tokens[0]).toBe(7);
    expect(a.sessions).toBe(2);
    a.down = true;
    const started = Date.now();
    await expect(ask(session, 8)).rejects.toMatchObject({ kind: 'transport' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it("passes on the request's own errors at once, and fails a session no engine can open", async () => {
    const a = new FakeEngine('http://a:1');
    const b = new FakeEngine('http://b:1');
    const pool = new SamplerPool({ baseUrl: 'http://a:1', checkpointArchive: async () => Buffer.from('') }, [a], opts);
    // The trainer itself lacks the checkpoint: a bad path, not an engine failure.
    await expect(pool.createSamplingSession({ modelPath: PATH })).rejects.toMatchObject({ kind: 'not_found' });
    const session = await pool.createSamplingSession({ baseModel: 'tiny' });
    await expect(session.sample(prompt, 0, {})).resolves.toBeDefined();
    a.refuse = true;
    const asked = a.asked;
    await expect(ask(session, 1)).rejects.toMatchObject({ kind: 'bad_request' });
    expect(a.asked - asked).toBe(1); // at once: not asked again after retryAfterMs, as a lost request would be
    expect(a.served).toBe(1);
    a.down = true;
    b.down = true;
    await expect(new SamplerPool(source(), [a, b], opts).createSamplingSession({ baseModel: 'tiny' })).rejects.toMatchObject({ kind: 'transport' });
  });
});
