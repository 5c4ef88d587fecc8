// What every activity needs: the backend for a run, heartbeats while awaiting remote futures, and
// the translation of backend errors into failures the workflow can act on.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { BackendError, type TrainingBackend } from '../backends/types.js';
import { ErrorTypes } from './types.js';

export interface ActivityDeps {
  /** The backend for a run's `base_url` (null: the worker's default). API keys stay in the worker. */
  backendFor(baseUrl: string | null): TrainingBackend;
}

const HEARTBEAT_EVERY_MS = 2_000;

/** Awaits `work` while heartbeating, so a dead worker is noticed and a cancel reaches us. */
export async function heartbeating<T>(work: Promise<T>, details?: unknown): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat(details);
  const timer = setInterval(() => ctx.heartbeat(details), HEARTBEAT_EVERY_MS);
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
  switch (err.kind) {
    case 'not_found':
      if (notFound === 'session-lost') return ApplicationFailure.retryable(msg, 'BackendUnavailable');
      return ApplicationFailure.nonRetryable(msg, notFound === 'model-lost' ? ErrorTypes.modelLost : ErrorTypes.invalidRequest, detailOf(err));
    case 'conflict':
      return ApplicationFailure.nonRetryable(msg, ErrorTypes.seqConflict, detailOf(err));
    case 'auth':
      return ApplicationFailure.nonRetryable(msg, ErrorTypes.auth);
    case 'bad_request':
      return ApplicationFailure.nonRetryable(msg, /non-?finite|nan|inf/i.test(msg) ? ErrorTypes.nonFiniteLoss : ErrorTypes.invalidRequest, detailOf(err));
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

export async function callBackend<T>(what: string, notFound: NotFoundMeans, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toFailure(err, what, notFound);
  }
}
