// Client of the SandboxFusion `run_code` HTTP API (reference 0.6.1 sandbox/sandboxfusion.py): the
// same request (files base64-encoded, `run_timeout` whole seconds), the same answer — success only
// for status "Success", `{error}` for an HTTP error, a SandboxError or a request that failed — and the
// same environment: SANDBOX_URL (default http://localhost:8080/run_code) and
// SANDBOX_MAX_CONCURRENCY (default 4) requests at a time, the rest queued.
import type { CodeRunner, RunCodeResponse } from './types.js';

export const DEFAULT_SANDBOX_URL = 'http://localhost:8080/run_code';

/** A counting semaphore: at most `limit` holders, the others wait in order. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(limit: number) {
    this.free = limit;
  }
  async use<T>(work: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

export interface SandboxFusionClientOptions {
  url?: string;
  maxConcurrency?: number;
  /** Bound on one HTTP request, in seconds (the reference's session timeout: 6000). */
  requestTimeoutSeconds?: number;
}

export class SandboxFusionClient implements CodeRunner {
  readonly url: string;
  readonly maxConcurrency: number;
  private readonly slots: Slots;
  private readonly requestTimeoutMs: number;

  constructor(opts: SandboxFusionClientOptions = {}) {
    this.url = opts.url ?? process.env.SANDBOX_URL ?? DEFAULT_SANDBOX_URL;
    this.maxConcurrency = opts.maxConcurrency ?? Number.parseInt(process.env.SANDBOX_MAX_CONCURRENCY ?? '4', 10);
    this.slots = new Slots(this.maxConcurrency);
    this.requestTimeoutMs = (opts.requestTimeoutSeconds ?? 6000) * 1000;
  }

  async run(code: string, files: Record<string, string>, timeout: number, language = 'python'): Promise<[boolean, RunCodeResponse | ({ error: string } & Partial<RunCodeResponse>)]> {
    const encoded = Object.fromEntries(Object.entries(files).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
    const payload = { code, language, run_timeout: Math.trunc(timeout), files: encoded };
    try {
      return await this.slots.use(async () => {
        const resp = await fetch(this.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(payload),
          signal: AbortSignal.timeout(this.requestTimeoutMs),
        });
        if (resp.status !== 200) return [false, { error: `HTTP ${resp.status}: ${await resp.text()}` }];
        const data = (await resp.json()) as RunCodeResponse;
        if (data.status === 'SandboxError') return [false, { ...data, error: data.message || 'SandboxError' }];
        return [data.status === 'Success', data];
      });
    } catch (e) {
      return [false, { error: e instanceof Error ? e.message : String(e) }];
    }
  }

  async close(): Promise<void> {}
}
