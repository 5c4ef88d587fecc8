// Client of the SandboxFusion `run_code` HTTP API (reference 0.6.1 sandbox/sandboxfusion.py): the
// same request (files base64-encoded, `run_timeout` whole seconds), the same answer — success only
// for status "Success", `{error}` for an HTTP error, a SandboxError or a request that timed out — and
// the same environment: SANDBOX_URL (default http://localhost:8080/run_code) and
// SANDBOX_MAX_CONCURRENCY (default 4) requests at a time, the rest queued.
//
// One difference: a server that cannot be reached (connection refused or dropped, a 502/503/504
// from a proxy in front of it) is not an answer. The reference returns `[False, {"error": …}]` and
// the code is graded as failing; here the request is sent again with backoff (the rollout activity
// that waits keeps heartbeating) until the server answers, for up to SANDBOX_RETRY_SECONDS (300),
// and past that run() throws SandboxUnreachableError, which fails the rollout retryably instead of
// recording a verdict the code never earned.
import { SandboxUnreachableError, type CodeRunner, type RunCodeResponse } from './types.js';

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

/** One retry of a request the server did not answer. */
export interface SandboxRetryInfo {
  url: string;
  /** Retries of this request so far, from 1. */
  attempt: number;
  /** Why the last try failed (e.g. ECONNREFUSED, HTTP 503). */
  reason: string;
  /** How long this request has been failing. */
  failingForMs: number;
  /** The wait before the next try. */
  delayMs: number;
}

export interface SandboxFusionClientOptions {
  url?: string;
  maxConcurrency?: number;
  /** Bound on one HTTP request, in seconds (the reference's session timeout: 6000). */
  requestTimeoutSeconds?: number;
  /** How long an unreachable server is retried before run() throws SandboxUnreachableError (SANDBOX_RETRY_SECONDS, 300). */
  retryForSeconds?: number;
  /** The first wait between tries, doubled each time up to `retryMaxDelaySeconds` (0.25 s, 5 s). */
  retryInitialDelaySeconds?: number;
  retryMaxDelaySeconds?: number;
  /** Told of every retry; default: a warning on stderr when a server stops answering and every 30 s after. */
  onRetry?: (info: SandboxRetryInfo) => void;
}

type Answer = [boolean, RunCodeResponse | ({ error: string } & Partial<RunCodeResponse>)];
/** A try's outcome: the server's answer, or why it could not be reached. */
type Outcome = { answer: Answer } | { unreachable: string };

/** Why a fetch failed below HTTP: the system error code when there is one (ECONNREFUSED, ECONNRESET, UND_ERR_SOCKET, …). */
function transportReason(e: unknown): string {
  let cause: unknown = e;
  for (let i = 0; i < 4 && cause; i++) {
    const c = cause as { code?: unknown; cause?: unknown; message?: unknown };
    if (typeof c.code === 'string') return c.code;
    cause = c.cause;
  }
  return e instanceof Error ? e.message : String(e);
}

const RETRY_STATUSES = new Set([502, 503, 504]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class SandboxFusionClient implements CodeRunner {
  readonly url: string;
  readonly maxConcurrency: number;
  private readonly slots: Slots;
  private readonly requestTimeoutMs: number;
  private readonly retryForMs: number;
  private readonly retryInitialMs: number;
  private readonly retryMaxMs: number;
  private readonly onRetry: (info: SandboxRetryInfo) => void;
  private lastWarnedMs = 0;

  constructor(opts: SandboxFusionClientOptions = {}) {
    this.url = opts.url ?? process.env.SANDBOX_URL ?? DEFAULT_SANDBOX_URL;
    this.maxConcurrency = opts.maxConcurrency ?? Number.parseInt(process.env.SANDBOX_MAX_CONCURRENCY ?? '4', 10);
    this.slots = new Slots(this.maxConcurrency);
    this.requestTimeoutMs = (opts.requestTimeoutSeconds ?? 6000) * 1000;
    const envRetry = Number.parseFloat(process.env.SANDBOX_RETRY_SECONDS ?? '');
    this.retryForMs = (opts.retryForSeconds ?? (Number.isFinite(envRetry) && envRetry >= 0 ? envRetry : 300)) * 1000;
    this.retryInitialMs = (opts.retryInitialDelaySeconds ?? 0.25) * 1000;
    this.retryMaxMs = (opts.retryMaxDelaySeconds ?? 5) * 1000;
    this.onRetry = opts.onRetry ?? ((info) => this.warn(info));
  }

  /** Once when a server stops answering, then every 30 s while it stays away. */
  private warn(info: SandboxRetryInfo): void {
    const now = Date.now();
    if (info.attempt > 1 && now - this.lastWarnedMs < 30_000) return;
    this.lastWarnedMs = now;
    console.warn(`[cookbook] sandbox ${info.url} unreachable (${info.reason}) for ${Math.round(info.failingForMs / 1000)} s; retrying (attempt ${info.attempt}, next in ${(info.delayMs / 1000).toFixed(1)} s)`);
  }

  private async post(payload: unknown): Promise<Outcome> {
    let resp: Response;
    try {
      resp = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
    } catch (e) {
      // The whole request ran past its bound: an answer, as the reference's session timeout is.
      if ((e as Error)?.name === 'TimeoutError') return { answer: [false, { error: (e as Error).message }] };
      return { unreachable: transportReason(e) };
    }
    if (RETRY_STATUSES.has(resp.status)) {
      await resp.body?.cancel().catch(() => {});
      return { unreachable: `HTTP ${resp.status}` };
    }
    let text: string;
    try {
      text = await resp.text();
    } catch (e) {
      // The connection dropped while the answer was on its way (the server died mid-reply).
      return { unreachable: transportReason(e) };
    }
    if (resp.status !== 200) return { answer: [false, { error: `HTTP ${resp.status}: ${text}` }] };
    let data: RunCodeResponse;
    try {
      data = JSON.parse(text) as RunCodeResponse;
    } catch (e) {
      return { answer: [false, { error: (e as Error).message }] };
    }
    if (data.status === 'SandboxError') return { answer: [false, { ...data, error: data.message || 'SandboxError' }] };
    return { answer: [data.status === 'Success', data] };
  }

  async run(code: string, files: Record<string, string>, timeout: number, language = 'python'): Promise<Answer> {
    const encoded = Object.fromEntries(Object.entries(files).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
    const payload = { code, language, run_timeout: Math.trunc(timeout), files: encoded };
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      // A slot is held for a try, never for the wait between tries.
      const outcome = await this.slots.use(() => this.post(payload));
      if ('answer' in outcome) return outcome.answer;
      const failingForMs = Date.now() - started;
      if (failingForMs >= this.retryForMs) {
        throw new SandboxUnreachableError(
          `sandbox ${this.url} unreachable for ${Math.round(failingForMs / 1000)} s (${outcome.unreachable}; ${attempt} tries; SANDBOX_RETRY_SECONDS=${this.retryForMs / 1000})`,
        );
      }
      const delayMs = Math.min(this.retryInitialMs * 2 ** (attempt - 1), this.retryMaxMs, Math.max(this.retryForMs - failingForMs, 0));
      this.onRetry({ url: this.url, attempt, reason: outcome.unreachable, failingForMs, delayMs });
      await sleep(delayMs);
    }
  }

  async close(): Promise<void> {}
}
