// What `cookbook dev` records about a local stack, in <stack dir>/stack.json: its addresses and the
// processes it started, plus the `cookbook worker` processes that registered with it. `dev` reads it
// to start only what is missing, `dev stop` to stop exactly those processes, and the other commands
// to find the Web UI of the Temporal server they talk to.
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { procStat } from './procfs.js';
import { repoRoot } from './services.js';

export const DEFAULT_TEMPORAL_PORT = 7233;

export interface RecordedService {
  name: 'temporal' | 'engine' | 'worker';
  pid: number;
  /** The process's start time (Linux /proc), so that a recycled pid is never taken for the service. */
  stamp?: string;
  /** Services `dev` spawned lead their own process group and are signalled as a group; a registered worker is one process. */
  group: boolean;
  startedBy: 'cookbook dev' | 'cookbook worker';
  logFile?: string;
  /** A worker's task queue. */
  taskQueue?: string;
}

export interface StackState {
  temporalAddress: string;
  uiUrl: string;
  engineUrl: string;
  dir: string;
  services: RecordedService[];
}

/**
 * A stack's folder (state file, Temporal's SQLite file, the engine's data, logs): --dev-dir or
 * COOKBOOK_DEV_DIR, else .dev for the default Temporal port and .dev/port-<P> for another, so that a
 * second stack on other ports never shares the first one's files.
 */
export function stackDir(o: { dir?: string; temporalPort?: number }, env: NodeJS.ProcessEnv = process.env): string {
  if (o.dir) return o.dir;
  if (env.COOKBOOK_DEV_DIR) return env.COOKBOOK_DEV_DIR;
  const port = o.temporalPort ?? DEFAULT_TEMPORAL_PORT;
  return port === DEFAULT_TEMPORAL_PORT ? join(repoRoot, '.dev') : join(repoRoot, '.dev', `port-${port}`);
}

const stateFile = (dir: string) => join(dir, 'stack.json');

export function readState(dir: string): StackState | undefined {
  if (!existsSync(stateFile(dir))) return undefined;
  let raw: Partial<StackState>;
  try {
    raw = JSON.parse(readFileSync(stateFile(dir), 'utf8'));
  } catch (err) {
    throw new Error(`${stateFile(dir)} is not valid JSON (${(err as Error).message}): remove it once you have stopped what it lists`);
  }
  // Files written before workers registered lack group and startedBy: every service was dev's own group.
  const services = (raw.services ?? []).map((s) => ({ ...s, group: s.group ?? true, startedBy: s.startedBy ?? 'cookbook dev' }));
  return { temporalAddress: raw.temporalAddress ?? '', uiUrl: raw.uiUrl ?? '', engineUrl: raw.engineUrl ?? '', dir, services };
}

/** Written whole and renamed into place: a reader never sees half a file. */
export function writeState(state: StackState): void {
  const file = stateFile(state.dir);
  if (state.services.length === 0) {
    rmSync(file, { force: true });
    return;
  }
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(tmp, file);
}

/** The start time of a process (field 22 of /proc/<pid>/stat), where /proc exists. */
export function processStamp(pid: number): string | undefined {
  return procStat(pid)?.[19];
}

export function isAlive(s: Pick<RecordedService, 'pid' | 'stamp'>): boolean {
  try {
    process.kill(s.pid, 0);
  } catch {
    return false;
  }
  return s.stamp === undefined || processStamp(s.pid) === s.stamp;
}

export function record(name: RecordedService['name'], pid: number, more: Partial<RecordedService> = {}): RecordedService {
  return { name, pid, stamp: processStamp(pid), group: true, startedBy: 'cookbook dev', ...more };
}

const normalize = (address: string) => address.trim().replace(/^localhost:/, '127.0.0.1:').replace(/^\[::1\]:/, '127.0.0.1:');

/** The folders where stacks may be recorded: COOKBOOK_DEV_DIR, .dev and .dev/port-*. */
function knownStackDirs(env: NodeJS.ProcessEnv): string[] {
  const base = join(repoRoot, '.dev');
  const dirs = [base];
  try {
    for (const e of readdirSync(base, { withFileTypes: true })) if (e.isDirectory() && e.name.startsWith('port-')) dirs.push(join(base, e.name));
  } catch {
    // no .dev yet
  }
  return env.COOKBOOK_DEV_DIR ? [env.COOKBOOK_DEV_DIR, ...dirs] : dirs;
}

/** The running stack whose Temporal server is at `address`, if `cookbook dev` started it. */
export function stackAt(address: string, env: NodeJS.ProcessEnv = process.env): StackState | undefined {
  for (const dir of knownStackDirs(env)) {
    let state: StackState | undefined;
    try {
      state = readState(dir);
    } catch {
      continue; // a damaged file elsewhere does not concern this address
    }
    const temporal = state?.services.find((s) => s.name === 'temporal');
    if (state && temporal && normalize(state.temporalAddress) === normalize(address) && isAlive(temporal)) return state;
  }
  return undefined;
}

/**
 * `cookbook worker` on a stack that `cookbook dev` runs adds itself to the stack's record, so that
 * `dev` counts it as the stack's worker and `dev stop` stops it; it removes itself when it stops.
 */
export function registerWorker(address: string, pid: number, taskQueue: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const state = stackAt(address, env);
  if (!state) return undefined;
  state.services = [...state.services.filter((s) => s.pid !== pid), record('worker', pid, { group: false, startedBy: 'cookbook worker', taskQueue })];
  writeState(state);
  return state.dir;
}

export function unregisterWorker(dir: string, pid: number): void {
  const state = readState(dir);
  if (!state) return;
  state.services = state.services.filter((s) => !(s.name === 'worker' && s.pid === pid));
  writeState(state);
}
