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
import { portOpen, PortTakenError, startOnPorts } from './ports.js';
import { startEngine, startTemporalServer, startWorkerProcess, type Service } from './services.js';
import { DEFAULT_TEMPORAL_PORT, isAlive, readState, record, stackDir, writeState, type RecordedService, type StackState } from './stack-state.js';
import { DEFAULT_TASK_QUEUE } from '../workers/task-queue.js';

/**
 * A port of the stack: a number, or 'auto': the stack chooses a free port just before the service
 * binds it, and another when that one is lost to another process first.
 */
export type PortSetting = number | 'auto';

export interface StackOptions {
  dir?: string;
  /** Default: 7233. */
  temporalPort?: PortSetting;
  /** Default: the Temporal port + 1000, as `temporal server start-dev` picks it; auto when the Temporal port is. */
  uiPort?: PortSetting;
  /** Default: 8100; auto when the Temporal port is. */
  enginePort?: PortSetting;
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
 * start none"; an engine port "start one there". A port may be `auto` (or 0): chosen free.
 */
export function devOptions(v: DevValues, env: NodeJS.ProcessEnv = process.env): StackOptions {
  const port = (flag: keyof DevValues | undefined, name: string | undefined): PortSetting | undefined => {
    const [raw, from] = flag && v[flag] !== undefined ? [v[flag], `--${flag}`] : [name ? env[name] : undefined, name];
    if (raw === undefined || raw === '') return undefined;
    if (raw === 'auto' || raw === '0') return 'auto';
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw new ConfigError(`${from} must be a port number, 1 to 65535, or auto (got ${raw})`);
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

/** The stack's ports, a port undefined where the stack chooses it; or the engine's URL where it starts none. */
interface PortPlan {
  temporal?: number;
  ui?: number;
  engine?: number;
  engineUrl?: string;
}

/** The ports to start on: the settings and their defaults (named ports as much as a flag's); auto ones undefined, to be chosen. */
function portPlan(opts: StackOptions): PortPlan {
  const auto = opts.temporalPort === 'auto';
  const setting = (p: PortSetting | undefined, otherwise: number | undefined) => (p === 'auto' ? undefined : (p ?? otherwise));
  const temporal = setting(opts.temporalPort, DEFAULT_TEMPORAL_PORT);
  return {
    temporal,
    ui: setting(opts.uiPort, temporal === undefined ? undefined : temporal + 1000),
    engine: opts.engineUrl ? undefined : setting(opts.enginePort, auto ? undefined : DEFAULT_ENGINE_PORT),
    engineUrl: opts.engineUrl,
  };
}

/** The stack's folder where one is given: --dev-dir, else COOKBOOK_DEV_DIR. */
const givenDir = (o: Pick<StackOptions, 'dir'>) => o.dir ?? (process.env.COOKBOOK_DEV_DIR || undefined);

/**
 * Where the stack recorded in the folder still runs, its ports for the auto ones: `dev` again then
 * completes that stack instead of starting a second one.
 */
function withRecordedPorts(plan: PortPlan, recorded: StackState): PortPlan {
  if (!recorded.services.some(isAlive)) return plan;
  const portOf = (address: string) => Number(address.split(':').pop()) || undefined;
  const filled = { ...plan, temporal: plan.temporal ?? portOf(recorded.temporalAddress), ui: plan.ui ?? portOf(recorded.uiUrl) };
  if (!plan.engineUrl && plan.engine === undefined) {
    // An engine the stack started keeps its port; else the stack used the engine at its URL.
    if (recorded.services.some((s) => s.name === 'engine')) filled.engine = portOf(recorded.engineUrl);
    else filled.engineUrl = recorded.engineUrl || undefined;
  }
  return filled;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const log = opts.log ?? ((line: string) => console.error(line));
  // The stack's folder: the one given, else the one of its Temporal port (.dev/port-<P>), which for
  // a port yet to be chosen is known once it is chosen.
  const given = givenDir(opts);
  const planned = portPlan(opts);
  const known = given ?? (planned.temporal === undefined ? undefined : stackDir({ temporalPort: planned.temporal }));
  const recorded = known ? readState(known) : undefined;
  const plan = recorded ? withRecordedPorts(planned, recorded) : planned;
  const folderFollowsPort = known === undefined;
  const dir = known ?? '';
  const running = (recorded?.services ?? []).filter(isAlive);
  const has = (name: RecordedService['name']) => running.some((s) => s.name === name);
  const state: StackState = {
    temporalAddress: plan.temporal === undefined ? '' : `127.0.0.1:${plan.temporal}`,
    uiUrl: plan.ui === undefined ? '' : `http://127.0.0.1:${plan.ui}`,
    engineUrl: plan.engineUrl ?? (plan.engine === undefined ? '' : `http://127.0.0.1:${plan.engine}`),
    dir,
    services: running,
  };
  // The engine's address matters while a recorded engine or worker (which talks to it) still runs.
  if (recorded && running.length > 0) checkSameStack(recorded, state, has('engine') || has('worker'));
  const kept = running.map((s) => `${s.name} (pid ${s.pid}${s.startedBy === 'cookbook worker' ? ', `cookbook worker`' : ''})`);
  for (const k of kept) log(`already running: ${k}`);

  const inUse = (port: number, what: string) =>
    new Error(`port ${port} (${what}) is in use by a process that the stack in ${state.dir} did not start: stop it, or run this stack on other ports with ${PORT_SETTINGS} (auto: free ones)`);
  const free = async (port: number, what: string) => {
    if (await portOpen(port)) throw inUse(port, what);
  };
  const chooseAgain = { givenTaken: inUse, onRetry: (err: unknown) => log(`${(err as Error).message}\nstarting it again`) };
  const started: Service[] = [];
  const stopStarted = async () => {
    for (const s of [...started].reverse()) await s.stop();
    const now = readState(state.dir);
    if (now) writeState({ ...now, services: now.services.filter((r) => !started.some((s) => s.proc.pid === r.pid)) });
  };
  const add = (service: Service, more: Partial<RecordedService> = {}) => {
    started.push(service);
    state.services.push(record(service.name as RecordedService['name'], service.proc.pid!, { logFile: service.logFile, ...more }));
    writeState(state); // at once: a `dev` interrupted half-way still leaves what it started findable by `dev stop`
  };
  try {
    if (!has('temporal')) {
      const wanted = [
        { what: 'Temporal', port: plan.temporal },
        { what: 'Temporal Web UI', port: plan.ui },
      ];
      const { ports, service } = await startOnPorts(
        wanted,
        async ([port, uiPort]) => {
          if (folderFollowsPort) state.dir = folderOfChosenPort(port);
          for (const w of wanted) if (w.port !== undefined) await free(w.port, w.what);
          log(`starting Temporal dev server on 127.0.0.1:${port} (Web UI http://127.0.0.1:${uiPort}, state ${join(state.dir, 'temporal.sqlite')})`);
          return startTemporalServer({ port, uiPort, dbFile: join(state.dir, 'temporal.sqlite'), logFile: join(state.dir, 'temporal.log'), detached: opts.detached });
        },
        chooseAgain,
      );
      state.temporalAddress = `127.0.0.1:${ports[0]}`;
      state.uiUrl = `http://127.0.0.1:${ports[1]}`;
      add(service);
    }
    if (!has('engine') && !plan.engineUrl) {
      const { ports, service } = await startOnPorts(
        [{ what: 'engine', port: plan.engine }],
        async ([port]) => {
          if (plan.engine !== undefined) await free(port, 'engine');
          log(`starting engine on 127.0.0.1:${port} (first start builds its Python environment; this can take several minutes)`);
          return startEngine({ port, dataDir: join(state.dir, 'engine'), logFile: join(state.dir, 'engine.log'), detached: opts.detached });
        },
        chooseAgain,
      );
      state.engineUrl = `http://127.0.0.1:${ports[0]}`;
      add(service);
    } else if (!has('engine')) {
      if (!(await answers(plan.engineUrl!))) {
        const from = opts.engineUrl ? '--engine-url or TINKER_BASE_URL' : `the engine the stack in ${state.dir} uses`;
        throw new Error(`the engine at ${plan.engineUrl} (${from}) does not answer: start it, or leave both unset and \`cookbook dev\` starts one`);
      }
      log(`using the engine at ${plan.engineUrl} (not started by this stack)`);
    }
    if (!has('worker')) {
      log('starting worker');
      const worker = await startWorkerProcess({ temporalAddress: state.temporalAddress, tinkerBaseUrl: state.engineUrl, logFile: join(state.dir, 'worker.log'), detached: opts.detached });
      add(worker, { taskQueue: DEFAULT_TASK_QUEUE });
    }
  } catch (err) {
    await stopStarted();
    throw err;
  }
  return { temporalAddress: state.temporalAddress, uiUrl: state.uiUrl, engineUrl: state.engineUrl, dir: state.dir, services: started, kept, stop: stopStarted };
}

/**
 * The folder of a stack on a chosen Temporal port, .dev/port-<P>. One where a stack recorded on
 * that port still runs a process (its Temporal server died, its worker did not) is not this
 * stack's: the port counts as taken, and another is chosen.
 */
function folderOfChosenPort(port: number): string {
  const dir = stackDir({ temporalPort: port }, {});
  const holder = readState(dir)?.services.find(isAlive);
  if (holder) throw new PortTakenError(`the stack recorded in ${dir} still runs ${holder.name} (pid ${holder.pid})`, port);
  return dir;
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
export async function stopStack(o: Pick<StackOptions, 'dir' | 'temporalPort' | 'uiPort' | 'enginePort' | 'engineUrl'> = {}): Promise<string> {
  const plan = portPlan(o);
  if (plan.temporal === undefined && !givenDir(o)) {
    throw new ConfigError('dev stop: an auto Temporal port names no stack: give the port `dev` printed (--temporal-port N), or the stack\'s --dev-dir');
  }
  const dir = stackDir({ dir: o.dir, temporalPort: plan.temporal });
  const state = readState(dir);
  if (!state) return `no stack is recorded in ${dir}${await portsInUse(plan)}`;
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

/** The plan's ports (auto ones name none) that some process holds. */
async function portsInUse(plan: PortPlan): Promise<string> {
  const ports: Array<[number | undefined, string]> = [
    [plan.temporal, 'Temporal'],
    [plan.ui, 'Temporal Web UI'],
    [plan.engine, 'engine'],
  ];
  const busy: string[] = [];
  for (const [port, what] of ports) if (port !== undefined && (await portOpen(port))) busy.push(`${port} (${what})`);
  return busy.length ? `; ${busy.length > 1 ? 'ports' : 'port'} ${busy.join(', ')} in use by ${busy.length > 1 ? 'processes' : 'a process'} \`cookbook dev\` did not start here: left running` : '';
}
