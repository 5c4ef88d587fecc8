// Runs on object storage (cookbook/stores/mirror.ts): every activity of a run whose log_path is an
// `s3://` URI works in this worker's mirror of the run, brought up to the store before the activity
// and sent back after it, before the activity reports success — so no workflow goes on past a write
// that is not in the store, and workers on hosts with no shared disk each see every other's writes.
//
// The activity itself sees a local folder: the `logPath` of the run it works for is the mirror's
// folder while it runs (and is given back as the URI in what it returns), so the run store and every
// file it writes work as on a local run. Other runs it reads (`continue_from.log_path`, a parent) are
// pulled too; RunStore finds their mirror through runDir().
import { ApplicationFailure, Context } from '@temporalio/activity';
import { isObjectStoreUri } from '../cookbook/stores/storage.js';
import { mirrorOf, StoreConflictError, type SyncOptions } from '../cookbook/stores/mirror.js';
import { heartbeating } from './context.js';
import type { Activities } from './types.js';

const MAX_DEPTH = 6;
const FAILED_ATTEMPT_WAIT_S = 15;

/** The object-store runs an activity's input names: those it works for (`logPath`) and those it only reads (`log_path`, `metrics_log_path`, …). */
export function storeRunsOf(input: unknown): { writes: Set<string>; reads: Set<string> } {
  const writes = new Set<string>();
  const reads = new Set<string>();
  const visit = (v: unknown, depth: number) => {
    if (depth > MAX_DEPTH || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) return v.forEach((x) => visit(x, depth + 1));
    for (const [k, x] of Object.entries(v)) {
      if (typeof x === 'string' && isObjectStoreUri(x)) {
        if (k === 'logPath') writes.add(x.replace(/\/+$/, ''));
        else if (/log_?path$/i.test(k)) reads.add(x.replace(/\/+$/, '')); // log_path, a sweep point's metrics_log_path, …
      } else visit(x, depth + 1);
    }
  };
  visit(input, 0);
  for (const w of writes) reads.delete(w);
  return { writes, reads };
}

/** `v` with every string that is (or starts with) a key of `map` rewritten; only `logPath` values going in. */
function rewrite(v: unknown, map: Map<string, string>, onlyLogPath: boolean, depth = 0): unknown {
  if (typeof v === 'string') {
    for (const [from, to] of map) if (v === from || v.startsWith(`${from}/`)) return to + v.slice(from.length);
    return v;
  }
  if (depth > MAX_DEPTH || v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => rewrite(x, map, onlyLogPath, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = onlyLogPath && typeof x === 'string' ? (k === 'logPath' ? rewrite(x, map, false) : x) : rewrite(x, map, onlyLogPath, depth + 1);
  return out;
}

/** What a wait for the store says in the activity's heartbeat (`cookbook watch` shows it). */
interface StoreWait {
  store?: string;
}

function syncOptions(waiting: StoreWait): SyncOptions {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    ctx = undefined;
  }
  return {
    onWait: (what, err) => {
      waiting.store = `${what}: ${(err as Error)?.message ?? err}`;
      ctx?.heartbeat(waiting);
    },
  };
}

/** `work`, heartbeating while it runs (inside an activity); a wait it ends is no longer said. */
async function inActivity<T>(work: Promise<T>, waiting: StoreWait): Promise<T> {
  try {
    Context.current();
  } catch {
    return work;
  }
  try {
    return await heartbeating(work, waiting);
  } finally {
    delete waiting.store;
  }
}

/** A conflict means this worker's copy was stale: retried (on a fresh pull), never a failed run. */
function asFailure(err: unknown): unknown {
  if (err instanceof StoreConflictError) return ApplicationFailure.retryable(err.message, 'StoreConflict');
  return err;
}

export function withStoreSync(activities: Activities): Activities {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities) as Array<[string, (...args: unknown[]) => Promise<unknown>]>) {
    wrapped[name] = async (...args: unknown[]) => {
      const { writes, reads } = storeRunsOf(args);
      if (writes.size === 0 && reads.size === 0) return fn(...args);
      const waiting: StoreWait = {};
      const opts = syncOptions(waiting);
      const mirrors = [...writes].map((uri) => mirrorOf(uri));
      for (const uri of [...writes, ...reads]) await inActivity(mirrorOf(uri).pull(opts), waiting);
      const toLocal = new Map(mirrors.map((m) => [m.uri, m.dir]));
      const toUri = new Map(mirrors.map((m) => [m.dir, m.uri]));
      for (const m of mirrors) m.active++;
      // A long activity (rollouts with tool calls and sandbox runs, an eval chunk) sends what it has
      // recorded every few seconds: a host that dies loses seconds of records, not the attempt's.
      const everyMs = Number(process.env.COOKBOOK_STORE_PUSH_EVERY_S ?? 5) * 1000;
      const meanwhile = setInterval(() => mirrors.forEach((m) => void m.push(opts).catch(() => undefined)), everyMs);
      try {
        let result: unknown;
        try {
          result = await fn(...(rewrite(args, toLocal, true) as unknown[]));
        } catch (err) {
          // What the attempt recorded before it failed (side effects by position) is kept for its
          // retry; a store that is down too is not waited out for long here (the retry pulls anyway).
          await inActivity(Promise.all(mirrors.map((m) => m.push({ ...opts, waitS: FAILED_ATTEMPT_WAIT_S }).catch(() => undefined))), waiting);
          throw err;
        }
        for (const m of mirrors) await inActivity(m.push(opts), waiting);
        return rewrite(result, toUri, false);
      } catch (err) {
        throw asFailure(err);
      } finally {
        clearInterval(meanwhile);
        for (const m of mirrors) m.active--;
      }
    };
  }
  return wrapped as unknown as Activities;
}
