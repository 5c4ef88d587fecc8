// Mirrors a run directory to experiment tracking: the config once, every metrics.jsonl row once
// (steps above the sink's cursor, so a step replayed after a restore is never logged twice), the
// summary, and at the end the final checkpoint. Driven from outside the workflow (the worker calls
// it after activities, src/activities/tracking.ts); it reads only the run store, so it can run
// any number of times, in any process, and converge on the same result.
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RunStore } from '../run-store.js';
import { MetricsTail } from './metrics-tail.js';
import { OfflineWandbRun } from './wandb-offline.js';
import { OnlineWandbRun } from './wandb-online.js';
import type { TrackedRun, TrackingSink } from './sink.js';

export type TrackingEnv = Record<string, string | undefined>;

interface TrackingConfig {
  wandb_project?: string | null;
  wandb_name?: string | null;
}

/**
 * The sink for a run, or undefined when it is not tracked: W&B online when WANDB_API_KEY is set
 * (unless WANDB_MODE is offline or disabled), else an offline run directory (as wandb would
 * be told with WANDB_MODE=offline: synced later by the user).
 */
export function sinkFor(logPath: string, env: TrackingEnv = process.env): TrackingSink | undefined {
  const record = new RunStore(logPath).read<TrackingConfig & Record<string, unknown>>();
  const project = record.config.wandb_project;
  if (!project || env.WANDB_MODE === 'disabled') return undefined;
  const run: TrackedRun = { workflowId: record.workflowId, logPath, project, name: record.config.wandb_name ?? null, config: record.config };
  if (env.WANDB_API_KEY && env.WANDB_MODE !== 'offline' && env.WANDB_MODE !== 'dryrun') {
    return new OnlineWandbRun(run, { apiKey: env.WANDB_API_KEY, baseUrl: env.WANDB_BASE_URL ?? 'https://api.wandb.ai', entity: env.WANDB_ENTITY });
  }
  return new OfflineWandbRun(run);
}

/** What the run finished with: the final checkpoint's row (paths and loop state), if it has one. */
function finalArtifacts(store: RunStore): Record<string, unknown> | undefined {
  return store.readCheckpoints().find((r) => r.name === 'final');
}

export async function syncRun(logPath: string, env: TrackingEnv = process.env): Promise<TrackingSink | undefined> {
  const sink = sinkFor(logPath, env);
  if (!sink) return undefined;
  return withRunLock(logPath, async () => {
    const store = new RunStore(logPath);
    await sink.start();
    const last = await sink.lastStep();
    // Rows ascend by step, so the fresh ones are the file's last rows and the summary as of them
    // is the summary of the whole file.
    const read = new MetricsTail(logPath).read(last);
    const fresh = read.rows.filter((r) => typeof r.step === 'number' && r.step > last);
    if (fresh.length) await sink.append(fresh, read.summary);
    const final = finalArtifacts(store);
    if (final && !(await sink.finished())) {
      const extra = Object.fromEntries(Object.entries(final).map(([k, v]) => [`final_checkpoint/${k}`, v]));
      await sink.finish({ ...read.summary, ...extra }, final, store.readCheckpoints().map((r) => `${JSON.stringify(r)}\n`).join(''));
    }
    // Only once the sink holds the rows: a failed send re-reads them next time.
    read.commit();
    return sink;
  });
}

/** One sync of a run at a time in this process… */
const chains = new Map<string, Promise<unknown>>();
/** …and across processes (two workers finishing activities of one run), a lock directory; one older than this is a crashed holder's. */
const STALE_LOCK_MS = 120_000;

async function withRunLock<T>(logPath: string, fn: () => Promise<T>): Promise<T> {
  const prev = chains.get(logPath) ?? Promise.resolve();
  const next = prev.catch(() => undefined).then(() => withDirLock(join(logPath, '.cookbook', 'tracking', 'lock'), fn));
  chains.set(logPath, next);
  try {
    return await next;
  } finally {
    if (chains.get(logPath) === next) chains.delete(logPath);
  }
}

async function withDirLock<T>(lock: string, fn: () => Promise<T>): Promise<T> {
  mkdirSync(join(lock, '..'), { recursive: true });
  for (let waited = 0; ; waited += 50) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      try {
        if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) rmSync(lock, { recursive: true, force: true });
      } catch {
        // released meanwhile
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
