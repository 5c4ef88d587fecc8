// Where a new run writes: a folder, or an object-store URI (`s3://bucket/prefix/<id>`), and the
// checks made before it starts, so a wrong bucket or credentials is one line at `train` time.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../config/overrides.js';
import { storageFromUri } from './index.js';
import { isObjectStoreUri } from './storage.js';

/** The run's folder or URI: the config's log_path, else `<runs dir>/<id>` (folders resolved from the working directory). */
export function runLogPath(configured: string | null | undefined, runsDir: string | undefined, workflowId: string): string {
  const under = (base: string) => (isObjectStoreUri(base) ? `${base.replace(/\/+$/, '')}/${workflowId}` : resolve(base, workflowId));
  if (configured == null) return under(runsDir ?? 'runs');
  return isObjectStoreUri(configured) ? configured.replace(/\/+$/, '') : resolve(configured);
}

/** Refuses a local log_path that already holds a run (a store's is checked by checkRunStore). */
export function checkLogPathFree(logPath: string): void {
  if (!isObjectStoreUri(logPath) && existsSync(resolve(logPath, '.cookbook', 'run.json'))) {
    throw new ConfigError(`log_path: ${logPath} already holds another run; choose another log_path or run_name`);
  }
}

/**
 * A run in an object store: the bucket is reachable with these credentials, writable, and holds no
 * run at log_path yet. Nothing is left behind.
 */
export async function checkRunStore(logPath: string): Promise<void> {
  if (!isObjectStoreUri(logPath)) return;
  const storage = storageFromUri(logPath);
  try {
    await storage.check();
    if (await storage.get('.cookbook/run.json')) throw new ConfigError(`log_path: ${logPath} already holds another run; choose another log_path or run_name`);
    const probe = `.cookbook/write-check-${process.pid}-${Date.now()}`;
    await storage.put(probe, Buffer.from('ok'));
    await storage.delete(probe);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`log_path: ${(err as Error).message}`);
  }
}
