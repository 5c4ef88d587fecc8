// How often an eval's activity (a chunk of examples, Inspect's run, prepare, finish) is tried before
// the eval fails with the last attempt's error. A retryable failure (the engine restarting, a worker
// killed mid-chunk, a judge answering 500) is tried again with backoff; one that keeps failing must
// end the eval rather than retry it for ever. A worker killed mid-attempt uses up that attempt.
import { z } from 'zod';

/**
 * 10 attempts ride out about two minutes of backoff between them, on top of each attempt's own
 * backend retries (minutes of an unreachable engine per call), and a few worker crashes.
 */
export const DEFAULT_EVAL_MAX_ATTEMPTS = 10;

export const EvalMaxAttemptsSchema = z.int().positive().default(DEFAULT_EVAL_MAX_ATTEMPTS);
