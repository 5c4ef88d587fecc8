// retrieve_future polling (§4.2): the outcome table and the per-status re-poll rules. A future's
// request is already accepted by the server, so re-polling is always safe; only submits need the
// seq-id dedupe argument.
import type { ZodType } from 'zod';
import type { ResolvedOptions } from './config.js';
import {
  backoffMs,
  ClientClosedError,
  errorFromResponse,
  errorFromTransport,
  type HttpClient,
  type HttpResponse,
  parseJsonBody,
  retryAfterMs,
  sleep,
  TransportFailure,
} from './http.js';
import { PROTOBUF_CONTENT_TYPE } from './proto.js';
import { CompleteMetadata, FutureError, TryAgain } from './schemas.js';
import { BackendError, type BackendErrorKind } from './types.js';

/** X-Tinker-Request-Type values (§1.3). */
export type FutureRequestType =
  | 'CreateModel'
  | 'ForwardBackward'
  | 'Forward'
  | 'OptimStep'
  | 'SaveWeights'
  | 'SaveWeightsForSampler'
  | 'LoadWeights'
  | 'UnloadModel'
  | 'Sample'
  // hatchery-core answers create_sampling_session with a future (tinker-backend.ts).
  | 'CreateSamplingSession';

export interface ResultDecoder<T> {
  json: ZodType<T> | ((value: unknown) => T);
  /** Present only for result types that have a protobuf form (ForwardBackwardOutput, SampleResponse). */
  proto?: (bytes: Uint8Array) => T;
}

const BARE_400_LIMIT = 3; // SDK: a bodiless 400 is re-polled at most 3 times
const BILLING_PAUSE_MS = 5_000; // SDK: 402 → sleep 5 s and repeat
const BILLING_WINDOW_MS = 3_600_000; // SDK default billing_exception_max_pause_duration_sec

function categoryKind(category: string | null | undefined): BackendErrorKind {
  if (category === 'user') return 'bad_request';
  if (category === 'server') return 'server';
  return 'other';
}

function decodeJson<T>(decoder: ResultDecoder<T>, value: unknown, requestType: string): T {
  const j = decoder.json;
  if (typeof j === 'function') return j(value);
  const parsed = j.safeParse(value);
  if (!parsed.success) {
    throw new BackendError(
      `Tinker ${requestType} result has an unexpected shape: ${parsed.error.message}`,
      200,
      requestType,
      value,
      'server',
    );
  }
  return parsed.data;
}

export interface PollArgs<T> {
  requestId: string;
  requestType: FutureRequestType;
  decoder: ResultDecoder<T>;
  /** Ask for protobuf results (only meaningful when decoder.proto exists). */
  wantProto: boolean;
}

/** High-resolution wall clock in ms since the epoch (what a caller's timing spans are measured in). */
const nowMs = () => performance.timeOrigin + performance.now();

/** Polls a future to its result, reporting how long that took to `opts.onFutureWait`. */
export async function pollFuture<T>(http: HttpClient, opts: ResolvedOptions, args: PollArgs<T>): Promise<T> {
  if (!opts.onFutureWait) return pollUntilDone(http, opts, args, { polls: 0 });
  const startMs = nowMs();
  const count = { polls: 0 };
  try {
    return await pollUntilDone(http, opts, args, count);
  } finally {
    opts.onFutureWait({ requestType: args.requestType, startMs, endMs: nowMs(), polls: count.polls });
  }
}

async function pollUntilDone<T>(http: HttpClient, opts: ResolvedOptions, args: PollArgs<T>, count: { polls: number }): Promise<T> {
  const { requestId, requestType, decoder } = args;
  const policy = opts.retry;
  const deadline = opts.futureTimeoutMs !== undefined ? Date.now() + opts.futureTimeoutMs : undefined;
  // Accept both when we can decode protobuf: a 0.18–0.24-style server may answer either (§0.1).
  const accept = args.wantProto && decoder.proto ? `${PROTOBUF_CONTENT_TYPE}, application/json` : 'application/json';
  let failures = 0; // consecutive transient failures (drive the backoff exponent)
  let failingSince: number | undefined;
  let bare400 = 0;
  let lastQueueWarning = 0;

  const pause = async (ms: number) => {
    try {
      await sleep(ms, http.closeSignal);
    } catch {
      throw new ClientClosedError(requestType);
    }
  };
  /** Transient trouble: back off unless this failure streak has outlived its budget. */
  const transient = async (error: BackendError, delay: number, budgetMs = policy.budgetMs) => {
    failingSince ??= Date.now();
    if (Date.now() - failingSince + delay > budgetMs) throw error;
    failures++;
    opts.onRetry?.({ requestType, reason: error.message, kind: error.kind, attempt: failures, delayMs: delay, failingForMs: Date.now() - failingSince });
    if (delay > 0) await pause(delay);
  };

  for (let iteration = 0; ; iteration++) {
    if (deadline !== undefined && Date.now() > deadline) {
      throw new BackendError(
        `Tinker ${requestType} future ${requestId} not done after ${opts.futureTimeoutMs} ms`,
        undefined,
        requestType,
        { request_id: requestId },
        'timeout',
      );
    }
    let res: HttpResponse;
    count.polls++;
    try {
      res = await http.send({
        method: 'POST',
        path: '/api/v1/retrieve_future',
        // We never ask for metadata-only replies: this client has no in-flight byte budget.
        body: { request_id: requestId, allow_metadata_only: false },
        accept,
        headers: { 'X-Tinker-Request-Iteration': String(iteration), 'X-Tinker-Request-Type': requestType },
        requestType,
        timeoutMs: opts.pollTimeoutMs,
      });
    } catch (err) {
      if (!(err instanceof TransportFailure)) throw err;
      await transient(errorFromTransport(err, requestType), backoffMs(failures, 2 * policy.baseDelayMs, policy.pollMaxDelayMs));
      continue;
    }

    const s = res.status;
    if (s === 200) {
      if (res.contentType.includes(PROTOBUF_CONTENT_TYPE)) {
        if (!decoder.proto) {
          throw new BackendError(`Tinker ${requestType} result arrived as protobuf, which it has no form for`, 200, requestType, undefined, 'server');
        }
        try {
          return decoder.proto(new Uint8Array(res.body.buffer, res.body.byteOffset, res.body.byteLength));
        } catch (err) {
          throw new BackendError(`Tinker ${requestType} protobuf result could not be decoded: ${(err as Error).message}`, 200, requestType, undefined, 'server');
        }
      }
      const json = parseJsonBody(res);
      if (json === undefined) {
        throw new BackendError(`Tinker ${requestType} result is not JSON`, 200, requestType, res.body.toString('utf8').slice(0, 500), 'server');
      }
      const tryAgain = TryAgain.safeParse(json);
      if (tryAgain.success) {
        // Immediate re-poll: the server long-polls, so this is not a hot loop (§4.2 rule 2).
        failures = 0;
        failingSince = undefined;
        const state = tryAgain.data.queue_state;
        if (state && state !== 'active' && Date.now() - lastQueueWarning > 60_000) {
          lastQueueWarning = Date.now();
          opts.logger.warn({ requestId, state, reason: tryAgain.data.queue_state_reason }, 'Tinker queue is paused');
        }
        continue;
      }
      const failed = FutureError.safeParse(json);
      if (failed.success) {
        throw new BackendError(
          `Tinker ${requestType} request ${requestId} failed (${failed.data.category ?? 'unknown'}): ${failed.data.error}`,
          200,
          requestType,
          json,
          categoryKind(failed.data.category),
        );
      }
      if (CompleteMetadata.safeParse(json).success) continue; // not requested; just fetch again
      return decodeJson(decoder, json, requestType);
    }

    const error = errorFromResponse(res, requestType);
    if (s === 408) {
      failures = 0;
      failingSince = undefined;
      continue; // treated as try_again (§4.2)
    }
    if (s >= 500) {
      // SDK re-polls at once; we do too for the first one, then back off so a dead server is not
      // hammered in a hot loop.
      await transient(error, failures === 0 ? 0 : backoffMs(failures - 1, policy.baseDelayMs / 5, policy.maxDelayMs));
      continue;
    }
    if (s === 429) {
      await transient(error, retryAfterMs(res.headers, policy) ?? backoffMs(failures, 2 * policy.baseDelayMs, policy.pollMaxDelayMs));
      continue;
    }
    if (s === 402) {
      await transient(error, BILLING_PAUSE_MS, BILLING_WINDOW_MS);
      continue;
    }
    if (s === 400 && res.body.length === 0 && bare400 < BARE_400_LIMIT) {
      bare400++;
      continue;
    }
    // A 404 here means the server no longer knows the future (it restarted, or dropped it): unlike
    // the SDK, which gives up, treat it as a 410 — the request may be resubmitted with its seq ids
    // (deduplicated if the server still has them; a lost model then answers 404 on the resubmit).
    if (s === 404) throw new BackendError(`${error.message} (the server no longer knows this future)`, 404, requestType, error.detail, 'expired');
    // 410 (expired promise) → kind 'expired'; everything else is fatal too.
    throw error;
  }
}
