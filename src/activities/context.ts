// What every activity needs: the backend for a run, heartbeats while awaiting remote futures, and
// the translation of backend errors into failures the workflow can act on.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { FutureWaitInfo, RetryInfo } from '../backends/config.js';
import { BackendError, BackendLostError, type SamplingBackend, type TrainingBackend } from '../backends/types.js';
import type { SamplerPoolConfig } from '../cookbook/config/common.js';
import { ServiceUnavailableError } from '../cookbook/errors.js';
import { nowMs, recordSpan } from '../cookbook/timing.js';
import { checkFailover } from './failover.js';
import { ErrorTypes } from './types.js';

export interface ActivityDeps {
  /**
   * The backend for a run's `base_url` (null: the worker's default) and `wire` (null: the worker's
   * TINKER_WIRE, else protobuf with a JSON fallback). API keys stay in the worker.
   */
  backendFor(baseUrl: string | null, wire?: 'json' | 'proto' | null): TrainingBackend;
  /** The sampler pool of a run's `sampler_pool` (one per pool per worker). */
  samplerPoolFor?(baseUrl: string | null, pool: SamplerPoolConfig): SamplingBackend;
}

/** Where a run's policy samples: its sampler pool when it names one, else its training backend. */
export function samplingBackendOf(deps: ActivityDeps, cfg: { base_url: string | null; wire?: 'json' | 'proto' | null; sampler_pool?: SamplerPoolConfig | null }): SamplingBackend {
  if (!cfg.sampler_pool) return deps.backendFor(cfg.base_url, cfg.wire);
  if (!deps.samplerPoolFor) throw ApplicationFailure.nonRetryable('sampler_pool: this worker cannot open sampler pools', ErrorTypes.config);
  return deps.samplerPoolFor(cfg.base_url, cfg.sampler_pool);
}

const HEARTBEAT_EVERY_MS = 2_000;

/** Why an activity's backend call is backing off, as its heartbeat details show it. */
interface BackendRetryDetails {
  backend: string;
  retry: number;
  failingForS: number;
  nextInS: number;
}
/** The latest backend retry of each running activity, until it is older than its backoff plus this. */
const lastRetry = new WeakMap<Context, { details: BackendRetryDetails; until: number }>();
const RETRY_SHOWN_MS = 5_000;

/**
 * The backend client's retry hook (the worker passes it to every backend it creates): a backend
 * call that keeps failing (unreachable, 5xx, …) heartbeats why into the activity that made it, so
 * the attempt stays alive while it backs off, and the Temporal UI's pending activity and
 * `cookbook status` show the reason instead of a silent wait.
 */
export function reportBackendRetry(info: RetryInfo): void {
  if (!inActivity()) return;
  const ctx = Context.current();
  const details: BackendRetryDetails = {
    backend: `${info.requestType}: ${info.reason}`,
    retry: info.attempt,
    failingForS: Math.round(info.failingForMs / 1000),
    nextInS: Math.round(info.delayMs / 100) / 10,
  };
  // A run with `failover` gives up on its training backend after its `after_s` (throws).
  checkFailover(ctx, info);
  lastRetry.set(ctx, { details, until: Date.now() + info.delayMs + RETRY_SHOWN_MS });
  ctx.heartbeat(details);
  // The backoff ahead is time the step waits: a timing span of its own (activities/timing.ts).
  const now = nowMs();
  recordSpan('backend_retry', now, now + info.delayMs, { request: info.requestType });
}

/**
 * The backend client's future hook (the worker passes it to every backend it creates): the time an
 * activity waited on a future's result becomes a `backend_wait` span of its step.
 */
export function reportFutureWait(info: FutureWaitInfo): void {
  recordSpan('backend_wait', info.startMs, info.endMs, { request: info.requestType, polls: info.polls });
}

function inActivity(): boolean {
  try {
    Context.current();
    return true;
  } catch {
    return false;
  }
}

/** Heartbeat details: the caller's, with the backend's retry status while it is current. */
function withRetryStatus(ctx: Context, details: unknown): unknown {
  const retry = lastRetry.get(ctx);
  if (!retry || Date.now() > retry.until) return details;
  return details && typeof details === 'object' ? { ...details, ...retry.details } : retry.details;
}

/** Awaits `work` while heartbeating, so a dead worker is noticed and a cancel reaches us. */
export async function heartbeating<T>(work: Promise<T>, details?: unknown): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat(withRetryStatus(ctx, details));
  const timer = setInterval(() => ctx.heartbeat(withRetryStatus(ctx, details)), HEARTBEAT_EVERY_MS);
  try {
    return await Promise.race([work, ctx.cancelled as Promise<never>]);
  } finally {
    clearInterval(timer);
  }
}

/**
 * Maps a backend error onto the failure types of activities/types.ts. Transport trouble and 5xx
 * stay retryable (the engine may be restarting); a model the server does not know is `ModelLost`.
 */
export function toFailure(err: unknown, what: string, notFound: NotFoundMeans): unknown {
  if (!(err instanceof BackendError)) return err;
  const msg = `${what}: ${err.message}`;
  if (err instanceof BackendLostError) return ApplicationFailure.nonRetryable(msg, ErrorTypes.backendLost);
  switch (err.kind) {
    case 'not_found':
      if (notFound === 'session-lost') return ApplicationFailure.retryable(msg, 'BackendUnavailable');
      return ApplicationFailure.nonRetryable(msg, notFound === 'model-lost' ? ErrorTypes.modelLost : ErrorTypes.invalidRequest, detailOf(err));
    case 'conflict':
      return ApplicationFailure.nonRetryable(msg, ErrorTypes.seqConflict, detailOf(err));
    case 'auth':
      return ApplicationFailure.nonRetryable(msg, ErrorTypes.auth);
    case 'bad_request':
      // Whole words: a bare "inf" also matches inside "stable_reinforce" or "info".
      return ApplicationFailure.nonRetryable(msg, /non-?finite|\bnan\b|\binf(inite)?\b/i.test(msg) ? ErrorTypes.nonFiniteLoss : ErrorTypes.invalidRequest, detailOf(err));
    default:
      return ApplicationFailure.retryable(msg, 'BackendUnavailable');
  }
}

function detailOf(err: BackendError): string {
  return typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail ?? null);
}

/**
 * What a 404 means depends on the call: on a call to an existing training model it means the
 * server lost the model (engine restart: restore); on a load from a path, a wrong path; on a call
 * to an existing sampling session, that the session or its future was lost (retry the activity,
 * which opens a new session on the same weights).
 */
export type NotFoundMeans = 'model-lost' | 'bad-path' | 'session-lost';

/**
 * Awaits a pipelined step's futures by request id; if the server no longer knows them (it
 * restarted, or expired them), submits the step again with the same sequence ids, as a retried
 * unpipelined step would: the server deduplicates them if it still has the model, and a server
 * that lost the model answers 404, which the caller maps to ModelLost (restore and replay).
 */
export async function collectOrResubmit<T>(collect: () => Promise<T>, resubmit: () => Promise<T>): Promise<T> {
  try {
    return await collect();
  } catch (err) {
    if (err instanceof BackendError && err.kind === 'expired') return resubmit();
    throw err;
  }
}

/**
 * One backend call from an activity, its errors mapped by `toFailure`. It heartbeats while it runs:
 * a call that backs off for a while (the backend unreachable) keeps its attempt alive and shows why.
 */
export async function callBackend<T>(what: string, notFound: NotFoundMeans, fn: () => Promise<T>): Promise<T> {
  try {
    return await (inActivity() ? heartbeating(fn()) : fn());
  } catch (err) {
    throw toFailure(err, what, notFound);
  }
}

/** A failed rollout or sampling pass: backend trouble is retried, anything else fails the step. */
export function rolloutFailure(err: unknown, where: string): unknown {
  if (err instanceof BackendLostError) return ApplicationFailure.nonRetryable(`${where}: ${err.message}`, ErrorTypes.backendLost);
  if (err instanceof BackendError) return ApplicationFailure.retryable(`${where}: ${err.message}`, 'BackendUnavailable');
  // A service a tool needs (the sandbox server) out of reach past its client's retries: try again later.
  if (err instanceof ServiceUnavailableError) return ApplicationFailure.retryable(`${where}: ${err.message}`, 'ServiceUnavailable');
  if (err instanceof ApplicationFailure) return err;
  return ApplicationFailure.nonRetryable(`${where}: ${(err as Error)?.message ?? String(err)}`, ErrorTypes.rollout);
}
