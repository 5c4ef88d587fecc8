// The local stack: Temporal dev server (SQLite file, Web UI, search attributes registered), the
// engine and a worker. `cookbook dev` runs it in the foreground or detached; the demo uses it.
// A stack already recorded in its folder (stack-state.ts) is completed, not refused: what still runs
// is kept and only what is missing (a killed worker, say) is started.
import { Client, Connection } from '@temporalio/client';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../cookbook/config/overrides.js';
import { DEFAULT_ENGINE_PORT } from './connect.js';
import { pollerMayLive, workflowPollers } from './liveness.js';
import { portOpen, startEngine, startTemporalServer, startWorkerProcess, type Service } from './services.js';
import { DEFAULT_TEMPORAL_PORT, isAlive, readState, record, stackDir, writeState, type RecordedService, type StackState } from './stack-state.js';
import { DEFAULT_TASK_QUEUE } from '../workers/task-queue.js';

export interface StackOptions {
  dir?: string;
  temporalPort?: number;
  /** Default: the Temporal port + 1000, as `temporal server start-dev` picks it. */
  uiPort?: number;
  enginePort?: number;
  /** A running engine or Tinker service for the worker, instead of starting an engine. */
  engineUrl?: string;
  detached?: boolean;
  log?: (line: string) => void;
}

export interface Stack {
  temporalAddress: string;
  uiUrl: string;
  engineUrl: string;
  dir: string;
  /** What this call started. */
  services: Service[];
  /** What was running already and was kept (`name (pid N)`). */
  kept: string[];
  /** Stops what this call started; what it kept keeps running. */
  stop(): Promise<void>;
}

export const PORT_SETTINGS = '--temporal-port/--ui-port/--engine-port (COOKBOOK_TEMPORAL_PORT/COOKBOOK_UI_PORT/COOKBOOK_ENGINE_PORT)';

/** Any HTTP answer counts (a hosted service may want an API key): the address is right. */
async function answers(baseUrl: string): Promise<boolean> {
  try {
    await fetch(new URL('api/v1/get_server_capabilities', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`), { signal: AbortSignal.timeout(5000) });
    return true;
  } catch {
    return false;
  }
}

/**
 * `cookbook dev`'s settings: flags, then COOKBOOK_TEMPORAL_PORT / COOKBOOK_UI_PORT /
 * COOKBOOK_ENGINE_PORT / COOKBOOK_DEV_DIR and TINKER_BASE_URL. An engine URL means "use that engine,
 * start none"; an engine port "start one there".
 */
export function devOptions(v: DevValues, env: NodeJS.ProcessEnv = process.env): StackOptions {
  const port = (flag: keyof DevValues | undefined, name: string | undefined) => {
    const [raw, from] = flag && v[flag] !== undefined ? [v[flag], `--${flag}`] : [name ? env[name] : undefined, name];
    if (raw === undefined || raw === '') return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw new ConfigError(`${from} must be a port number, 1 to 65535 (got ${raw})`);
    return n;
  };
  const both = (what: string) => new ConfigError(`${what}: give an engine port (\`dev\` starts an engine there) or an engine URL (it uses that running engine), not both`);
  if (v['engine-port'] !== undefined && v['engine-url'] !== undefined) throw both('--engine-port and --engine-url');
  let engineUrl = v['engine-url'];
  let enginePort = port('engine-port', undefined);
  if (engineUrl === undefined && enginePort === undefined) {
    if (env.TINKER_BASE_URL && env.COOKBOOK_ENGINE_PORT) throw both('TINKER_BASE_URL and COOKBOOK_ENGINE_PORT');
    engineUrl = env.TINKER_BASE_URL || undefined;
    enginePort = port(undefined, 'COOKBOOK_ENGINE_PORT');
  }
  return { temporalPort: port('temporal-port', 'COOKBOOK_TEMPORAL_PORT'), uiPort: port('ui-port', 'COOKBOOK_UI_PORT'), enginePort, engineUrl, dir: v['dev-dir'] };
}

type DevValues = { 'temporal-port'?: string; 'ui-port'?: string; 'engine-port'?: string; 'engine-url'?: string; 'dev-dir'?: string };

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const temporalPort = opts.temporalPort ?? DEFAULT_TEMPORAL_PORT;
  const uiPort = opts.uiPort ?? temporalPort + 1000;
  const enginePort = opts.enginePort ?? DEFAULT_ENGINE_PORT;
  const dir = stackDir({ dir: opts.dir, temporalPort });
  const log = opts.log ?? ((line: string) => console.error(line));
  const wanted: StackState = {
    temporalAddress: `127.0.0.1:${temporalPort}`,
    uiUrl: `http://127.0.0.1:${uiPort}`,
    engineUrl: opts.engineUrl ?? `http://127.0.0.1:${enginePort}`,
    dir,
    services: [],
  };
  const recorded = readState(dir);
  const running = (recorded?.services ?? []).filter(isAlive);
  const has = (name: RecordedService['name']) => running.some((s) => s.name === name);
  // The engine's address matters while a recorded engine or worker (which talks to it) still runs.
  if (recorded && running.length > 0) checkSameStack(recorded, wanted, has('engine') || has('worker'));
  const state: StackState = { ...wanted, services: running };
  const kept = running.map((s) => `${s.name} (pid ${s.pid}${s.startedBy === 'cookbook worker' ? ', `cookbook worker`' : ''})`);
  for (const k of kept) log(`already running: ${k}`);

  const free = async (port: number, what: string) => {
    if (await portOpen(port)) {
      throw new Error(`port ${port} (${what}) is in use by a process that the stack in ${dir} did not start: stop it, or run this stack on other ports with ${PORT_SETTINGS}`);
    }
  };
  const started: Service[] = [];
  const stopStarted = async () => {
    for (const s of [...started].reverse()) await s.stop();
    const now = readState(dir);
    if (now) writeState({ ...now, services: now.services.filter((r) => !started.some((s) => s.proc.pid === r.pid)) });
  };
  const add = (service: Service, more: Partial<RecordedService> = {}) => {
    started.push(service);
    state.services.push(record(service.name as RecordedService['name'], service.proc.pid!, { logFile: service.logFile, ...more }));
    writeState(state); // at once: a `dev` interrupted half-way still leaves what it started findable by `dev stop`
  };
  try {
    if (!has('temporal')) {
      await free(temporalPort, 'Temporal');
      await free(uiPort, 'Temporal Web UI');
      log(`starting Temporal dev server on ${state.temporalAddress} (Web UI ${state.uiUrl}, state ${join(dir, 'temporal.sqlite')})`);
      add(await startTemporalServer({ port: temporalPort, uiPort, dbFile: join(dir, 'temporal.sqlite'), logFile: join(dir, 'temporal.log'), detached: opts.detached }));
    }
    if (!has('engine') && !opts.engineUrl) {
      await free(enginePort, 'engine');
      log(`starting engine on 127.0.0.1:${enginePort} (first start builds its Python environment; this can take several minutes)`);
      add(await startEngine({ port: enginePort, dataDir: join(dir, 'engine'), logFile: join(dir, 'engine.log'), detached: opts.detached }));
    } else if (!has('engine')) {
      if (!(await answers(opts.engineUrl!))) {
        throw new Error(`the engine at ${opts.engineUrl} (--engine-url or TINKER_BASE_URL) does not answer: start it, or leave both unset and \`cookbook dev\` starts one`);
      }
      log(`using the engine at ${opts.engineUrl} (not started by this stack)`);
    }
    if (!has('worker')) {
      log('starting worker');
      const worker = await startWorkerProcess({ temporalAddress: state.temporalAddress, tinkerBaseUrl: state.engineUrl, logFile: join(dir, 'worker.log'), detached: opts.detached });
      add(worker, { taskQueue: DEFAULT_TASK_QUEUE });
    }
  } catch (err) {
    await stopStarted();
    throw err;
  }
  return { temporalAddress: state.temporalAddress, uiUrl: state.uiUrl, engineUrl: state.engineUrl, dir, services: started, kept, stop: stopStarted };
}

/** A recorded stack that still runs is completed only with the same addresses: anything else is another stack. */
function checkSameStack(recorded: StackState, wanted: StackState, engineRuns: boolean): void {
  const differ = [
    recorded.temporalAddress !== wanted.temporalAddress ? `Temporal ${recorded.temporalAddress}` : '',
    recorded.uiUrl !== wanted.uiUrl ? `Web UI ${recorded.uiUrl}` : '',
    engineRuns && recorded.engineUrl !== wanted.engineUrl ? `engine ${recorded.engineUrl}` : '',
  ].filter(Boolean);
  if (differ.length > 0) {
    throw new Error(`the stack recorded in ${recorded.dir} runs on other addresses (${differ.join(', ')}): start it with its own ports, stop it with \`npx cookbook dev stop\`, or give this one another --dev-dir`);
  }
}

/**
 * Stops what the stack in `dir` started (workers, engine, Temporal) and the `cookbook worker`
 * processes registered with it, and says what it leaves running: workers that poll the stack's
 * Temporal without having been started or registered here, an engine it did not start, a port
 * held by another process.
 */
export async function stopStack(o: { dir?: string; temporalPort?: number; uiPort?: number; enginePort?: number } = {}): Promise<string> {
  const dir = stackDir(o);
  const state = readState(dir);
  if (!state) return `no stack is recorded in ${dir}${await portsInUse(o)}`;
  const running = state.services.filter(isAlive);
  const lines: string[] = [];
  const temporal = running.find((s) => s.name === 'temporal');
  if (temporal) lines.push(...(await foreignWorkers(state, running)));
  if (!state.services.some((s) => s.name === 'engine') && state.engineUrl) lines.push(`left as it is: the engine at ${state.engineUrl} (not started by this stack)`);

  // Workers first (they finish their tasks), then the engine, then Temporal.
  const order: RecordedService['name'][] = ['worker', 'engine', 'temporal'];
  const stopped: string[] = [];
  for (const name of order) {
    const these = running.filter((s) => s.name === name);
    for (const s of these) signal(s, 'SIGTERM');
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && these.some(isAlive)) await new Promise((r) => setTimeout(r, 100));
    for (const s of these.filter(isAlive)) signal(s, 'SIGKILL');
    stopped.push(...these.map((s) => `${s.name} (pid ${s.pid}${s.startedBy === 'cookbook worker' ? ', `cookbook worker`' : ''})`));
  }
  writeState({ ...state, services: [] });
  const gone = state.services.length - running.length;
  lines.unshift(`stopped ${stopped.length ? stopped.join(', ') : 'nothing'} of the stack in ${dir}${gone ? ` (${gone} recorded process${gone > 1 ? 'es were' : ' was'} gone already)` : ''}`);
  return lines.join('\n');
}

function signal(s: RecordedService, sig: NodeJS.Signals): void {
  try {
    process.kill(s.group ? -s.pid : s.pid, sig);
  } catch {
    // already gone
  }
}

/** Workers polling the stack's task queues that it did not start and that did not register with it. */
async function foreignWorkers(state: StackState, running: RecordedService[]): Promise<string[]> {
  const ours = new Set(running.filter((s) => s.name === 'worker').map((s) => `${s.pid}@${hostname()}`));
  const queues = [...new Set([DEFAULT_TASK_QUEUE, ...running.flatMap((s) => (s.taskQueue ? [s.taskQueue] : []))])];
  const lines: string[] = [];
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address: state.temporalAddress, connectTimeout: '3s' });
    const client = new Client({ connection });
    for (const queue of queues) {
      for (const p of await client.withDeadline(Date.now() + 3000, () => workflowPollers(client, queue))) {
        if (ours.has(p.identity) || !pollerMayLive(p)) continue;
        lines.push(`left running: worker ${p.identity} polling task queue ${queue} (not started by \`cookbook dev\` nor registered with it; stop it where it runs — it loses its Temporal server now)`);
      }
    }
  } catch (err) {
    lines.push(`could not list the workers polling ${state.temporalAddress} (${(err as Error).message}); any not started here keep running`);
  } finally {
    await connection?.close().catch(() => undefined);
  }
  return lines;
}

async function portsInUse(o: { temporalPort?: number; uiPort?: number; enginePort?: number }): Promise<string> {
  const temporalPort = o.temporalPort ?? DEFAULT_TEMPORAL_PORT;
  const ports: Array<[number, string]> = [
    [temporalPort, 'Temporal'],
    [o.uiPort ?? temporalPort + 1000, 'Temporal Web UI'],
    [o.enginePort ?? DEFAULT_ENGINE_PORT, 'engine'],
  ];
  const busy: string[] = [];
  for (const [port, what] of ports) if (await portOpen(port)) busy.push(`${port} (${what})`);
  return busy.length ? `; ${busy.length > 1 ? 'ports' : 'port'} ${busy.join(', ')} in use by ${busy.length > 1 ? 'processes' : 'a process'} \`cookbook dev\` did not start here: left running` : '';
}
