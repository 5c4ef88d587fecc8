// Sampling spread over several engines beside the training backend (a run's `sampler_pool`).
//
// Routing is per sample request, inside the activity, not per rollout activity in the workflow:
// a rollout group makes many requests (its samples, its turns), so balancing requests keeps every
// engine busy even with few groups in flight; a request lost with its engine is re-sent to another
// with the same seed, which gives the same tokens (seeds follow the logical position, never the
// engine), so a killed sampler engine costs time and nothing else; and workflows and their
// histories stay exactly as without a pool. Each engine serves at most `maxInFlight` requests of
// this worker at once; the least busy live engine gets the next one, so a slow engine is given
// less, and one that fails sits out `retryAfterMs` before it is tried again.
//
// Weights: an engine other than the trainer gets a sampler checkpoint before its first session on
// it opens: the trainer's archive of the checkpoint (the protocol's archive route), imported under
// the same tinker path (the engine's `import_checkpoint`). A session on the pool opens on every
// live engine before it is returned, so the weights of a step are on every engine before any
// rollout samples from them.
import type { ModelInput, SampleOpts, SampleResponse, SamplingParams, SamplingSession } from './types.js';
import { BackendError } from './types.js';

type SessionSource = { modelPath: string } | { baseModel: string };

/** What the pool needs of each sampler engine. */
export interface PoolEngine {
  readonly baseUrl: string;
  createSamplingSession(source: SessionSource): Promise<SamplingSession>;
  weightsInfo(path: string): Promise<unknown>;
  importCheckpoint(path: string, tar: Buffer, opts?: { ttlSeconds?: number }): Promise<{ imported: boolean }>;
}

/** Where sampler checkpoints come from: the training backend. */
export interface WeightsSource {
  readonly baseUrl: string;
  checkpointArchive(path: string): Promise<Buffer>;
}

export interface SamplerPoolOptions {
  /** Requests one engine serves at once for this pool; more wait for a free engine. */
  maxInFlight: number;
  /** How long an engine that failed sits out before it is tried again. */
  retryAfterMs: number;
  /** How long a request may keep failing on every engine before it fails (and its activity retries). */
  budgetMs: number;
  /** How long an engine keeps imported weights (a new sampler every step: they must not pile up). */
  importTtlSeconds?: number;
  /** Engines going down and coming back, weights synced: for the worker's log. */
  onEvent?: (event: PoolEvent) => void;
}

export type PoolEvent =
  | { type: 'down'; engine: string; reason: string }
  | { type: 'up'; engine: string }
  | { type: 'weights'; engine: string; path: string; imported: boolean; ms: number };

interface Member {
  engine: PoolEngine;
  inFlight: number;
  /** Until when the engine sits out after a failure (0: live). */
  downUntil: number;
  /** Requests served (for tests and the bench). */
  served: number;
}

/** Archives kept for engines that still need them: the newest few sampler checkpoints. */
const ARCHIVES_KEPT = 4;

/** An engine's failure, as opposed to the request's own (bad input, a missing checkpoint). */
export function isEngineFailure(err: unknown): boolean {
  if (!(err instanceof BackendError)) return false;
  return err.kind === 'transport' || err.kind === 'timeout' || err.kind === 'server' || err.kind === 'expired';
}

/** The engine answered but no longer knows the session (it restarted): open a new one there. */
function isSessionLost(err: unknown): boolean {
  return err instanceof BackendError && err.kind === 'not_found' && err.requestType !== 'create_sampling_session';
}

export class SamplerPool {
  private readonly members: Member[];
  private readonly waiting = new Set<() => void>();
  private readonly archives = new Map<string, Promise<Buffer>>();
  private readonly synced = new Map<PoolEngine, Map<string, Promise<void>>>();
  private next = 0;

  constructor(
    private readonly source: WeightsSource,
    engines: readonly PoolEngine[],
    private readonly opts: SamplerPoolOptions,
  ) {
    if (engines.length === 0) throw new Error('a sampler pool needs at least one engine');
    this.members = engines.map((engine) => ({ engine, inFlight: 0, downUntil: 0, served: 0 }));
  }

  /** Requests served by each engine, by base URL. */
  get served(): Record<string, number> {
    return Object.fromEntries(this.members.map((m) => [m.engine.baseUrl, m.served]));
  }

  /**
   * A session on every live engine (the weights imported where missing); requests on it go to
   * whichever engine is free. Fails only if no engine could open it.
   */
  async createSamplingSession(source: SessionSource): Promise<SamplingSession> {
    const session = new PooledSamplingSession(this, source);
    const now = Date.now();
    const live = this.members.filter((m) => m.downUntil <= now);
    const opened = await Promise.allSettled((live.length ? live : this.members).map((m) => session.on(m)));
    const failures = opened.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    if (failures.length === opened.length) throw failures.find((e) => !isEngineFailure(e)) ?? failures[0];
    return session;
  }

  /** The least busy live engine with a free slot, waiting for one when all are busy or down. */
  async acquire(): Promise<Member> {
    for (;;) {
      const now = Date.now();
      let best: Member | undefined;
      for (let i = 0; i < this.members.length; i++) {
        // Ties go round-robin, so equal engines share the work from the first request on.
        const m = this.members[(this.next + i) % this.members.length];
        if (m.downUntil > now || m.inFlight >= this.opts.maxInFlight) continue;
        if (!best || m.inFlight < best.inFlight) best = m;
      }
      if (best) {
        this.next = (this.members.indexOf(best) + 1) % this.members.length;
        best.inFlight += 1;
        return best;
      }
      // Wake on a release, or when the first engine that is down may be tried again.
      const downs = this.members.filter((m) => m.downUntil > now).map((m) => m.downUntil - now);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiting.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, downs.length ? Math.min(...downs) + 1 : 60_000);
        this.waiting.add(wake);
      });
    }
  }

  release(m: Member, ok: boolean): void {
    m.inFlight -= 1;
    if (ok) {
      m.served += 1;
      if (m.downUntil) {
        m.downUntil = 0;
        this.opts.onEvent?.({ type: 'up', engine: m.engine.baseUrl });
      }
    }
    for (const wake of [...this.waiting]) wake();
  }

  markDown(m: Member, err: unknown): void {
    const first = m.downUntil <= Date.now();
    m.downUntil = Date.now() + this.opts.retryAfterMs;
    this.synced.delete(m.engine);
    if (first) this.opts.onEvent?.({ type: 'down', engine: m.engine.baseUrl, reason: (err as Error).message });
  }

  get budgetMs(): number {
    return this.opts.budgetMs;
  }

  /** The checkpoint on `engine` before a session there reads it (the trainer has it already). */
  ensureWeights(engine: PoolEngine, path: string): Promise<void> {
    if (sameServer(engine.baseUrl, this.source.baseUrl)) return Promise.resolve();
    let byPath = this.synced.get(engine);
    if (!byPath) this.synced.set(engine, (byPath = new Map()));
    let done = byPath.get(path);
    if (!done) {
      done = this.importInto(engine, path);
      byPath.set(path, done);
      done.catch(() => byPath.delete(path));
    }
    return done;
  }

  private async importInto(engine: PoolEngine, path: string): Promise<void> {
    const started = Date.now();
    try {
      await engine.weightsInfo(path);
      return; // already there (imported by another worker, or an earlier attempt)
    } catch (err) {
      if (!(err instanceof BackendError && err.kind === 'not_found')) throw err;
    }
    const { imported } = await engine.importCheckpoint(path, await this.archive(path), { ttlSeconds: this.opts.importTtlSeconds });
    this.opts.onEvent?.({ type: 'weights', engine: engine.baseUrl, path, imported, ms: Date.now() - started });
  }

  private archive(path: string): Promise<Buffer> {
    let tar = this.archives.get(path);
    if (!tar) {
      tar = this.source.checkpointArchive(path);
      this.archives.set(path, tar);
      tar.catch(() => this.archives.delete(path));
      for (const old of [...this.archives.keys()].slice(0, Math.max(0, this.archives.size - ARCHIVES_KEPT))) this.archives.delete(old);
    }
    return tar;
  }
}

/** One logical sampler over the pool: a session per engine, opened on first use. */
class PooledSamplingSession implements SamplingSession {
  readonly samplingSessionId: string;
  private readonly sessions = new Map<Member, Promise<SamplingSession>>();

  constructor(
    private readonly pool: SamplerPool,
    private readonly source: SessionSource,
  ) {
    this.samplingSessionId = `pool:${'modelPath' in source ? source.modelPath : source.baseModel}`;
  }

  on(m: Member): Promise<SamplingSession> {
    let s = this.sessions.get(m);
    if (!s) {
      const source = this.source;
      s = ('modelPath' in source ? this.pool.ensureWeights(m.engine, source.modelPath) : Promise.resolve()).then(() => m.engine.createSamplingSession(source));
      this.sessions.set(m, s);
      s.catch(() => this.sessions.delete(m));
    }
    return s;
  }

  sample(prompt: ModelInput, numSamples: number, params: SamplingParams, opts?: SampleOpts): Promise<SampleResponse> {
    return this.route((s) => s.sample(prompt, numSamples, params, opts));
  }

  computeLogprobs(prompt: ModelInput, lastN?: number): Promise<Array<number | null>> {
    return this.route((s) => s.computeLogprobs(prompt, lastN));
  }

  /** Runs one request on a free engine; an engine's failure sends it to another, until the budget runs out. */
  private async route<T>(request: (s: SamplingSession) => Promise<T>): Promise<T> {
    const started = Date.now();
    let lostSessions = 0;
    for (;;) {
      const m = await this.pool.acquire();
      let ok = false;
      try {
        const result = await request(await this.on(m));
        ok = true;
        return result;
      } catch (err) {
        // A session the engine forgot is reopened there, but not forever.
        if (isSessionLost(err) && ++lostSessions <= 3) {
          this.sessions.delete(m);
        } else if (isEngineFailure(err)) {
          this.sessions.delete(m);
          this.pool.markDown(m, err);
        } else {
          throw err;
        }
        if (Date.now() - started > this.pool.budgetMs) throw err;
      } finally {
        this.pool.release(m, ok);
      }
    }
  }
}

function sameServer(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
}
