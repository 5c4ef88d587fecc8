// A report target is a log dir or a workflow id. A path that exists wins, so reports of local or
// copied runs need no server; an id is looked up through Temporal (the run's memo holds its
// resolved config, log_path included) only when it names no directory.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { mountRun } from '../cookbook/stores/mirror.js';
import { isObjectStoreUri } from '../cookbook/stores/storage.js';
import { checkLogDir, ReportError } from './load.js';

const storeError = (uri: string) => (err: unknown): never => {
  throw new ReportError(`cannot read the run at ${uri}: ${(err as Error).message}`);
};

/** Looks up a workflow id's log dir (the CLI passes one backed by Temporal). */
export type LogDirLookup = (workflowId: string) => Promise<string>;

const looksLikePath = (t: string) => isAbsolute(t) || t.startsWith('.') || t.startsWith('~') || /[\\/]$/.test(t);

export async function resolveTarget(target: string, lookup?: LogDirLookup): Promise<string> {
  // A run in an object store is read from this host's mirror of it, brought up to the store first.
  if (isObjectStoreUri(target)) return checkLogDir(await mountRun(target.replace(/\/+$/, ''), { nested: true }).catch(storeError(target)));
  if (existsSync(target)) return checkLogDir(target);
  // Workflow ids may contain '/' (pipeline stages are `<id>/<index>-<kind>`), so only clear paths stop here.
  if (looksLikePath(target)) throw new ReportError(`no log dir at ${resolve(target)}`);
  if (!lookup) throw new ReportError(`"${target}" is not a log dir, and no Temporal server was given to look it up as a workflow id`);
  let logDir: string;
  try {
    logDir = await lookup(target);
  } catch (err) {
    // Say both readings of the target: a mistyped path reads as an unknown workflow id.
    throw new ReportError(`"${target}" is no directory here, and as a workflow id: ${(err as Error).message}`);
  }
  if (isObjectStoreUri(logDir)) return checkLogDir(await mountRun(logDir, { nested: true }).catch(storeError(logDir)));
  if (!existsSync(logDir)) {
    throw new ReportError(`run "${target}" writes to ${logDir}, which is not on this machine (run the report where the worker writes, or copy the log dir and pass its path)`);
  }
  return checkLogDir(logDir);
}
