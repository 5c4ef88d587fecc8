// The engine's request log for benches (`bench:reference --request-log`): every request an engine
// process served (bench/support/engine-requests/sitecustomize.py writes them), summarised per arm as
// requests per route and the time the engine sat with no request open: between one answer and the
// next request, no work was queued or awaited, which is time a loop's own handoffs cost.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const SITE = join(import.meta.dirname, 'engine-requests');

interface Request {
  t0: number;
  t1: number;
  path: string;
}

export interface RequestSummary {
  /** Requests per route (its last path segment), health checks and session heartbeats aside. */
  routes: Record<string, number>;
  /** Seconds from the first sample or forward to the last answer with no request open, and how many such gaps. */
  idleS: number;
  gaps: number;
}

/** Makes every engine this process starts from now on log its requests under `prefix`.<pid>. */
export function enableEngineRequestLog(prefix: string): void {
  process.env.BENCH_ENGINE_REQUEST_LOG = prefix;
  process.env.PYTHONPATH = [SITE, process.env.PYTHONPATH].filter(Boolean).join(':');
}

/** The log files under `prefix` (one per engine process). */
export function requestLogFiles(prefix: string): string[] {
  const dir = dirname(prefix);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.startsWith(`${basename(prefix)}.`))
    .map((f) => join(dir, f));
}

const IGNORED = new Set(['healthz', 'session_heartbeat']);
const WORK = /\/(asample|forward|forward_backward)$/;

export function summariseRequests(files: string[]): RequestSummary {
  const requests: Request[] = files
    .flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Request))
    .filter((r) => !IGNORED.has(r.path.split('/').pop()!))
    .sort((a, b) => a.t0 - b.t0);
  const routes: Record<string, number> = {};
  let idleS = 0;
  let gaps = 0;
  // Idle time is counted from the loop's first model work, not from its setup's requests.
  const first = requests.find((r) => WORK.test(r.path))?.t0 ?? Infinity;
  let open = first;
  for (const r of requests) {
    const route = r.path.split('/').pop()!;
    routes[route] = (routes[route] ?? 0) + 1;
    if (r.t0 >= first && r.t0 > open) {
      idleS += r.t0 - open;
      gaps++;
    }
    open = Math.max(open, r.t1);
  }
  return { routes, idleS, gaps };
}
