// The local stack: Temporal dev server (SQLite file, UI on 8233, search attributes registered),
// the engine and a worker. `cookbook dev` runs it in the foreground or detached; the demo uses it.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_ENGINE_PORT } from './connect.js';
import { portOpen, repoRoot, startEngine, startTemporalServer, startWorkerProcess, type Service } from './services.js';

export interface StackOptions {
  dir?: string;
  temporalPort?: number;
  uiPort?: number;
  enginePort?: number;
  detached?: boolean;
  log?: (line: string) => void;
}

export interface Stack {
  temporalAddress: string;
  uiUrl: string;
  engineUrl: string;
  dir: string;
  services: Service[];
  stop(): Promise<void>;
}

export const defaultStackDir = () => join(repoRoot, '.dev');
const stateFile = (dir: string) => join(dir, 'stack.json');

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const dir = opts.dir ?? defaultStackDir();
  const temporalPort = opts.temporalPort ?? 7233;
  const uiPort = opts.uiPort ?? 8233;
  const enginePort = opts.enginePort ?? DEFAULT_ENGINE_PORT;
  const log = opts.log ?? ((line: string) => console.error(line));
  for (const [what, port] of [['Temporal', temporalPort], ['Temporal UI', uiPort], ['engine', enginePort]] as const) {
    if (await portOpen(port)) throw new Error(`port ${port} (${what}) is in use: is a stack already running? (\`npx cookbook dev stop\`)`);
  }
  const services: Service[] = [];
  const stopAll = async () => {
    for (const s of services.reverse()) await s.stop();
    rmSync(stateFile(dir), { force: true });
  };
  try {
    log(`starting Temporal dev server on 127.0.0.1:${temporalPort} (UI http://127.0.0.1:${uiPort}, state ${join(dir, 'temporal.sqlite')})`);
    services.push(await startTemporalServer({ port: temporalPort, uiPort, dbFile: join(dir, 'temporal.sqlite'), logFile: join(dir, 'temporal.log'), detached: opts.detached }));
    log(`starting engine on 127.0.0.1:${enginePort} (first start builds its Python environment; this can take several minutes)`);
    const engine = await startEngine({ port: enginePort, dataDir: join(dir, 'engine'), logFile: join(dir, 'engine.log'), detached: opts.detached });
    services.push(engine);
    log('starting worker');
    services.push(
      await startWorkerProcess({
        temporalAddress: `127.0.0.1:${temporalPort}`,
        tinkerBaseUrl: engine.baseUrl,
        logFile: join(dir, 'worker.log'),
        detached: opts.detached,
      }),
    );
  } catch (err) {
    await stopAll();
    throw err;
  }
  const stack: Stack = {
    temporalAddress: `127.0.0.1:${temporalPort}`,
    uiUrl: `http://127.0.0.1:${uiPort}`,
    engineUrl: `http://127.0.0.1:${enginePort}`,
    dir,
    services,
    stop: stopAll,
  };
  writeFileSync(stateFile(dir), JSON.stringify({ ...stack, services: services.map((s) => ({ name: s.name, pid: s.proc.pid, logFile: s.logFile })) }, null, 2));
  return stack;
}

/** Stops a detached stack started earlier (by pid group, as recorded in .dev/stack.json). */
export async function stopDetachedStack(dir = defaultStackDir()): Promise<string> {
  if (!existsSync(stateFile(dir))) return 'no detached stack is recorded';
  const state = JSON.parse(readFileSync(stateFile(dir), 'utf8')) as { services: Array<{ name: string; pid: number }> };
  for (const s of [...state.services].reverse()) {
    try {
      process.kill(-s.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && state.services.some((s) => alive(s.pid))) await new Promise((r) => setTimeout(r, 200));
  for (const s of state.services) if (alive(s.pid)) process.kill(-s.pid, 'SIGKILL');
  rmSync(stateFile(dir), { force: true });
  return `stopped ${state.services.map((s) => s.name).join(', ')}`;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
