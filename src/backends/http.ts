// One HTTP exchange with a Tinker server, and the retry loop around it (§1, §6). Every retry of a
// logical call resends the identical body (same seq id, same X-Idempotency-Key): the server
// deduplicates on (model id, seq id), which is what makes retrying a training submit safe.
import { randomUUID } from 'node:crypto';
import { context, propagation } from '@opentelemetry/api';
import type { ResolvedOptions, RetryPolicy } from './config.js';
import { SDK_VERSION } from './config.js';
import { BackendError, type BackendErrorKind } from './types.js';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Endpoint path such as `/api/v1/create_model`; appended to the base URL's path (§1.1). */
  path: string;
  /** A JSON value, or raw protobuf bytes. */
  body?: unknown;
  contentType?: string;
  accept?: string;
  headers?: Record<string, string>;
  /** Tinker request type / endpoint name, carried into errors. */
  requestType: string;
  timeoutMs?: number;
  /** An answer that fails the call at once, however retryable its status (a dialect probe). */
  giveUpOn?: (res: HttpResponse) => boolean;
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  body: Buffer;
  contentType: string;
}

/** Thrown by `send` when no HTTP response arrived at all. */
export class TransportFailure extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
    override readonly cause?: unknown,
  ) {
    super(message);
    this.name = 'TransportFailure';
  }
}

export class ClientClosedError extends BackendError {
  constructor(requestType: string) {
    super(`Tinker client is closed (${requestType})`, undefined, requestType, undefined, 'other');
  }
}

export function joinUrl(baseUrl: string, path: string): string {
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  return new URL(path.replace(/^\/+/, ''), base).toString();
}

export function parseJsonBody(res: HttpResponse): unknown {
  if (res.body.length === 0) return undefined;
  try {
    return JSON.parse(res.body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The server's explanation: FastAPI `detail`, our engine's `error`, or the raw text. */
export function errorDetail(res: HttpResponse): unknown {
  const json = parseJsonBody(res);
  if (json && typeof json === 'object' && !Array.isArray(json)) {
    const o = json as Record<string, unknown>;
    if ('detail' in o) return o.detail;
    if ('error' in o) return o.error;
    if ('message' in o) return o.message;
    return json;
  }
  if (json !== undefined) return json;
  const text = res.body.toString('utf8').slice(0, 2000);
  return text || undefined;
}

export function kindForStatus(status: number): BackendErrorKind {
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 401 || status === 403) return 'auth';
  if (status === 410) return 'expired';
  if (status === 408) return 'timeout';
  if (status === 400 || status === 413 || status === 415 || status === 422) return 'bad_request';
  if (status >= 500 || status === 429) return 'server';
  return 'other';
}

export function errorFromResponse(res: HttpResponse, requestType: string): BackendError {
  const detail = errorDetail(res);
  const text = typeof detail === 'string' ? detail : JSON.stringify(detail);
  return new BackendError(
    `Tinker ${requestType} failed: HTTP ${res.status}${text ? `: ${text}` : ''}`,
    res.status,
    requestType,
    detail,
    kindForStatus(res.status),
  );
}

export function errorFromTransport(f: TransportFailure, requestType: string): BackendError {
  return new BackendError(
    `Tinker ${requestType} failed: ${f.message}`,
    undefined,
    requestType,
    f.cause instanceof Error ? f.cause.message : f.cause,
    f.timedOut ? 'timeout' : 'transport',
  );
}

/**
 * A 409 that carries a JSON error body is the application speaking: for our engine it means the
 * seq id was already used with a different payload (DESIGN §3.1), which no retry can fix, so it
 * surfaces at once as kind 'conflict'. A 409 without a JSON body (a proxy, a lock timeout) or with
 * `x-should-retry: true` is treated as transient per §6 and retried; if it is still 409 when the
 * retry budget is spent, it surfaces as 'conflict' too.
 */
export function isDefinitiveConflict(res: HttpResponse): boolean {
  if (res.status !== 409) return false;
  if (res.headers.get('x-should-retry') === 'true') return false;
  const json = parseJsonBody(res);
  return json !== null && typeof json === 'object' && !Array.isArray(json);
}

/** §6 status rules (HTTP layer + outer helper), honouring `x-should-retry`. */
export function isRetryableStatus(res: HttpResponse): boolean {
  const should = res.headers.get('x-should-retry');
  if (should === 'true') return true;
  if (should === 'false') return false;
  const s = res.status;
  if (s === 409) return !isDefinitiveConflict(res);
  // A bodiless 400 is what a proxy glitch looks like (§1.4): the SDK retries it as a connection error.
  if (s === 400 && res.body.length === 0) return true;
  return s === 408 || s === 429 || s >= 500;
}

/** Retry-After-Ms / Retry-After (seconds or HTTP date), used only when 0 < t ≤ maxRetryAfterMs. */
export function retryAfterMs(headers: Headers | undefined, policy: RetryPolicy): number | undefined {
  if (!headers) return undefined;
  let ms: number | undefined;
  const msHeader = headers.get('retry-after-ms');
  if (msHeader !== null && msHeader.trim() !== '' && Number.isFinite(Number(msHeader))) ms = Number(msHeader);
  const header = headers.get('retry-after');
  if (ms === undefined && header !== null && header.trim() !== '') {
    const secs = Number(header);
    if (Number.isFinite(secs)) ms = secs * 1000;
    else {
      const at = Date.parse(header);
      if (Number.isFinite(at)) ms = at - Date.now();
    }
  }
  if (ms === undefined || !(ms > 0) || ms > policy.maxRetryAfterMs) return undefined;
  return ms;
}

/** min(base·2^n, max) × (1 − 0.25·U[0,1)) — the SDK's HTTP-layer formula. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  const raw = Math.min(baseMs * 2 ** attempt, maxMs);
  return raw * (1 - 0.25 * Math.random());
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export class HttpClient {
  private readonly closed = new AbortController();
  private authValue: () => Promise<string>;

  constructor(private readonly opts: ResolvedOptions) {
    this.authValue = async () => opts.apiKey;
  }

  get closeSignal(): AbortSignal {
    return this.closed.signal;
  }

  get isClosed(): boolean {
    return this.closed.signal.aborted;
  }

  /** JWT mode (§1.2): the credential sent in X-API-Key comes from a provider. */
  setAuthProvider(provider: () => Promise<string>): void {
    this.authValue = provider;
  }

  close(): void {
    this.closed.abort(new Error('client closed'));
  }

  /** One attempt. Resolves with any HTTP response; rejects with TransportFailure or ClientClosedError. */
  async send(req: HttpRequest, extraHeaders: Record<string, string> = {}): Promise<HttpResponse> {
    if (this.isClosed) throw new ClientClosedError(req.requestType);
    // A request that brings its own credential (the JWT exchange itself) must not ask for one.
    const ownKey = req.headers && 'X-API-Key' in req.headers;
    const headers: Record<string, string> = {
      ...(ownKey ? {} : { 'X-API-Key': await this.authValue() }),
      'User-Agent': `durable-cookbook/Tinker-TS (tinker-protocol ${SDK_VERSION})`,
      Accept: req.accept ?? 'application/json',
      ...req.headers,
      ...extraHeaders,
    };
    // The caller's trace as W3C `traceparent`, which the engine continues (workers/tracing.ts
    // registers the propagator when tracing is on; off, the API's no-op propagator adds nothing).
    propagation.inject(context.active(), headers);
    let body: string | Uint8Array | undefined;
    if (req.body instanceof Uint8Array) {
      body = req.body;
      headers['Content-Type'] = req.contentType ?? 'application/x-protobuf';
    } else if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['Content-Type'] = req.contentType ?? 'application/json';
    }
    const timeout = AbortSignal.timeout(req.timeoutMs ?? this.opts.requestTimeoutMs);
    const signal = AbortSignal.any([timeout, this.closed.signal]);
    try {
      const res = await fetch(joinUrl(this.opts.baseUrl, req.path), {
        method: req.method,
        headers,
        body,
        signal,
        redirect: 'manual',
      });
      const buf = Buffer.from(await res.arrayBuffer());
      return { status: res.status, headers: res.headers, body: buf, contentType: res.headers.get('content-type') ?? '' };
    } catch (err) {
      if (this.isClosed) throw new ClientClosedError(req.requestType);
      if (timeout.aborted) throw new TransportFailure(`request timed out after ${req.timeoutMs ?? this.opts.requestTimeoutMs} ms`, true, err);
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new TransportFailure(`connection error (${why})`, false, cause ?? err);
    }
  }

  /**
   * One logical call with the retries of §6: connection errors, timeouts, 408, transient 409, 429
   * and 5xx are retried with backoff (Retry-After honoured) until `retry.maxRetries` or
   * `retry.budgetMs` is exhausted; any other status fails at once. Returns the 2xx response.
   */
  async call(req: HttpRequest, policy: RetryPolicy = this.opts.retry): Promise<HttpResponse> {
    const started = Date.now();
    // One idempotency key per logical call, reused across its retries (as the SDK does).
    const idempotency: Record<string, string> =
      req.method === 'GET' ? {} : { 'X-Idempotency-Key': `ts-retry-${randomUUID()}` };
    for (let attempt = 0; ; attempt++) {
      let res: HttpResponse | undefined;
      let failure: BackendError;
      let retryable: boolean;
      try {
        res = await this.send(req, { ...idempotency, 'X-Retry-Count': String(attempt) });
        if (res.status >= 200 && res.status < 300) return res;
        failure = errorFromResponse(res, req.requestType);
        retryable = isRetryableStatus(res) && !req.giveUpOn?.(res);
      } catch (err) {
        if (!(err instanceof TransportFailure)) throw err;
        failure = errorFromTransport(err, req.requestType);
        retryable = true;
      }
      const delay = retryAfterMs(res?.headers, policy) ?? backoffMs(attempt, policy.baseDelayMs, policy.maxDelayMs);
      if (!retryable || attempt >= policy.maxRetries || Date.now() - started + delay > policy.budgetMs) throw failure;
      this.opts.logger.debug?.({ requestType: req.requestType, status: res?.status, attempt, delay }, 'retrying Tinker request');
      this.opts.onRetry?.({ requestType: req.requestType, reason: failure.message, kind: failure.kind, attempt: attempt + 1, delayMs: delay, failingForMs: Date.now() - started });
      try {
        await sleep(delay, this.closed.signal);
      } catch {
        throw new ClientClosedError(req.requestType);
      }
    }
  }
}
