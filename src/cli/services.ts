// Child processes of the local stack (Temporal dev server, engine, worker): spawned in their own
// process group with output to a log file, ready when a probe passes and they listen on their ports
// themselves, stopped with their group.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { portHolders, portOpen, PortTakenError } from './ports.js';
import { SEARCH_ATTRIBUTES } from '../workflows/shared/search-attributes.js';
import { ensureEngineEnv } from '../stack/engine-env.mjs';
import { ensureTemporalCli } from '../stack/temporal-bin.mjs';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface Service {
  name: string;
  proc: ChildProcess;
  logFile: string;
  /** SIGTERM the group, SIGKILL after a grace period. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL the group at once (chaos and crash tests). */
  kill(): Promise<void>;
}

export async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return res.ok;
  } catch {
    return false;
  }
}

async function waitFor(spec: SpawnSpec, proc: ChildProcess, logStart: number): Promise<void> {
  const timeoutMs = spec.readyTimeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw exitedEarly(spec, proc, logStart);
    if (listensItself(spec, proc) && (await spec.ready())) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${spec.name} was not ready after ${timeoutMs / 1000}s; see ${spec.logFile}`);
}

/**
 * Whether the service's own process group listens on its ports, so that the probe that follows is
 * answered by the service and not by another process holding a port (another test's engine, which
 * would pass the probe while the service itself fails to bind): false until it has bound them all.
 * Another process holding one is no failure yet: it may be on its way out (the service's previous
 * run, restarted on the same port), and a service that cannot bind exits, which exitedEarly
 * reports as the port taken. Where the host cannot tell (not Linux), true: the probe alone decides.
 */
function listensItself(spec: SpawnSpec, proc: ChildProcess): boolean {
  if (!spec.ports?.length) return true;
  const holders = portHolders(spec.ports, proc.pid!);
  return !holders || [...holders.values()].every((holder) => holder === 'group');
}

const ADDRESS_IN_USE = /address already in use|EADDRINUSE/i;

/**
 * The error for a service that exited before it was ready: a PortTakenError when its log (what it
 * wrote since this start) says a port it binds was in use, naming the port where the line does.
 */
function exitedEarly(spec: SpawnSpec, proc: ChildProcess, logStart: number): Error {
  const how = `${spec.name} exited (${proc.exitCode ?? proc.signalCode}) before it was ready`;
  let line: string | undefined;
  try {
    line = readFileSync(spec.logFile).subarray(logStart).toString('utf8').split('\n').find((l) => ADDRESS_IN_USE.test(l));
  } catch {
    // no log to read: the plain error
  }
  if (!line) return new Error(`${how}; see ${spec.logFile}`);
  return new PortTakenError(`${how}: a port it binds was taken (${line.trim().slice(0, 300)}); see ${spec.logFile}`, portInLine(line));
}

/** The port of `127.0.0.1:8100` (Go, nginx, Node) or `('127.0.0.1', 8100)` (Python) in a log line. */
function portInLine(line: string): number | undefined {
  const m = /(?:\d+\.\d+\.\d+\.\d+|localhost|\[[0-9a-f:]*\]):(\d+)|\('[^']*', (\d+)\)/i.exec(line);
  return m ? Number(m[1] ?? m[2]) : undefined;
}

function exited(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((r) => proc.once('exit', () => r()));
}

let reaperProc: { proc: ChildProcess; ready: Promise<ChildProcess> } | undefined;

/**
 * Services run in their own process groups, so they would outlive a parent that dies without
 * stopping them; one reaper process per parent stops them then (src/stack/reaper.mjs). Its channel
 * is unref'd: it never keeps the parent alive.
 */
function reaper(): Promise<ChildProcess> {
  if (!reaperProc || !reaperProc.proc.connected) {
    const proc = spawn(process.execPath, [join(repoRoot, 'src', 'stack', 'reaper.mjs')], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'], detached: true });
    proc.unref();
    const ready = new Promise<ChildProcess>((resolve, reject) => {
      proc.once('message', () => {
        proc.channel?.unref();
        resolve(proc);
      });
      proc.once('error', reject);
    });
    reaperProc = { proc, ready };
  }
  return reaperProc.ready;
}

function signalGroup(proc: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-proc.pid!, signal);
  } catch {
    // already gone
  }
}

export interface SpawnSpec {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  ready: () => Promise<boolean>;
  /**
   * The TCP ports it listens on (on 127.0.0.1): it is ready only once its own process group listens
   * there, whatever answers the probe; one that exits saying a port was in use fails with PortTakenError.
   */
  ports?: number[];
  readyTimeoutMs?: number;
  /** Keep running after this process exits (cookbook dev --detach). */
  detached?: boolean;
}

export async function spawnService(spec: SpawnSpec): Promise<Service> {
  mkdirSync(dirname(spec.logFile), { recursive: true });
  const fd = openSync(spec.logFile, 'a');
  const logStart = fstatSync(fd).size;
  const proc = spawn(spec.command, spec.args, { cwd: repoRoot, env: { ...process.env, ...spec.env }, stdio: ['ignore', fd, fd], detached: true });
  closeSync(fd);
  if (spec.detached) proc.unref();
  // Wait until the reaper holds the group, so that no moment leaves it unguarded.
  else await reaper().then((r) => new Promise((resolve) => r.send({ add: proc.pid }, resolve)));
  const forget = () => {
    if (!spec.detached) void reaper().then((r) => r.send({ remove: proc.pid }));
  };
  const service: Service = {
    name: spec.name,
    proc,
    logFile: spec.logFile,
    async stop(graceMs = 10_000) {
      signalGroup(proc, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(proc, 'SIGKILL'), graceMs);
      await exited(proc);
      clearTimeout(timer);
      forget();
    },
    async kill() {
      signalGroup(proc, 'SIGKILL');
      await exited(proc);
      forget();
    },
  };
  try {
    await waitFor(spec, proc, logStart);
  } catch (err) {
    await service.kill();
    throw err;
  }
  return service;
}

export interface TemporalServerOpts {
  port: number;
  uiPort?: number;
  dbFile?: string;
  logFile: string;
  detached?: boolean;
}

/** The real Temporal dev server, with the cookbook's search attributes registered. */
export async function startTemporalServer(opts: TemporalServerOpts): Promise<Service> {
  const cli = await ensureTemporalCli();
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(opts.port), '--log-level', 'warn'];
  if (opts.dbFile) {
    mkdirSync(dirname(opts.dbFile), { recursive: true });
    args.push('--db-filename', opts.dbFile);
  }
  args.push(...(opts.uiPort ? ['--ui-port', String(opts.uiPort), '--ui-ip', '127.0.0.1'] : ['--headless']));
  for (const key of SEARCH_ATTRIBUTES) args.push('--search-attribute', `${key.name}=${searchAttributeCliType(key.type)}`);
  // Updates (`cookbook set`) and a prompt continue-as-new in tests need these.
  args.push('--dynamic-config-value', 'frontend.enableUpdateWorkflowExecution=true');
  return spawnService({
    name: 'temporal',
    command: cli,
    args,
    logFile: opts.logFile,
    detached: opts.detached,
    ports: opts.uiPort ? [opts.port, opts.uiPort] : [opts.port],
    ready: async () => (await portOpen(opts.port)) && (!opts.uiPort || (await portOpen(opts.uiPort))),
  });
}

function searchAttributeCliType(type: string): string {
  return type === 'KEYWORD' ? 'Keyword' : type === 'INT' ? 'Int' : type === 'DOUBLE' ? 'Double' : type === 'BOOL' ? 'Bool' : type === 'DATETIME' ? 'Datetime' : type === 'KEYWORD_LIST' ? 'KeywordList' : 'Text';
}

export interface EngineOpts {
  port: number;
  dataDir: string;
  logFile?: string;
  extraArgs?: string[];
  detached?: boolean;
  /** Added to the engine's environment (OTEL_EXPORTER_OTLP_ENDPOINT, say). */
  env?: NodeJS.ProcessEnv;
}

/** The local Tinker-compatible engine (builds its Python environment on first use). */
export async function startEngine(opts: EngineOpts): Promise<Service & { baseUrl: string }> {
  await ensureEngineEnv();
  const baseUrl = `http://127.0.0.1:${opts.port}`;
  const service = await spawnService({
    name: 'engine',
    command: process.execPath,
    args: [join(repoRoot, 'src', 'stack', 'engine.mjs'), '--port', String(opts.port), '--data-dir', opts.dataDir, ...(opts.extraArgs ?? [])],
    logFile: opts.logFile ?? join(opts.dataDir, 'engine.log'),
    detached: opts.detached,
    env: opts.env,
    // A cold start imports PyTorch and transformers: on a busy disk (right after `npm ci`, say)
    // that alone has taken two minutes. waitFor fails at once if the process exits instead.
    readyTimeoutMs: 600_000,
    ports: [opts.port],
    ready: () => httpOk(`${baseUrl}/api/v1/healthz`),
  });
  return Object.assign(service, { baseUrl });
}

export interface WorkerProcessOpts {
  temporalAddress: string;
  tinkerBaseUrl: string;
  taskQueue?: string;
  logFile: string;
  env?: NodeJS.ProcessEnv;
  detached?: boolean;
  /** Serve Prometheus metrics on 127.0.0.1 there (COOKBOOK_METRICS_PORT): a port it must listen on. */
  metricsPort?: number;
}

/** A cookbook worker in its own process, ready once it has logged that it polls. */
export async function startWorkerProcess(opts: WorkerProcessOpts): Promise<Service> {
  const before = existsSync(opts.logFile) ? readFileSync(opts.logFile, 'utf8').length : 0;
  return spawnService({
    name: 'worker',
    command: process.execPath,
    args: ['--import', 'tsx', join(repoRoot, 'src', 'workers', 'main.ts')],
    logFile: opts.logFile,
    detached: opts.detached,
    env: {
      // The stack's own dev server is plaintext on 127.0.0.1: the user's Temporal settings (a
      // default temporal.toml profile, TEMPORAL_TLS_*, an API key) are for other clusters.
      ...Object.fromEntries(Object.keys(process.env).filter((k) => /^TEMPORAL_(?!CLI$)/.test(k)).map((k) => [k, undefined])),
      TEMPORAL_CONFIG_FILE: join(dirname(opts.logFile), 'no-temporal-config.toml'),
      TEMPORAL_ADDRESS: opts.temporalAddress,
      TINKER_BASE_URL: opts.tinkerBaseUrl,
      ...(opts.taskQueue ? { COOKBOOK_TASK_QUEUE: opts.taskQueue } : {}),
      ...(opts.metricsPort ? { COOKBOOK_METRICS_PORT: String(opts.metricsPort) } : {}),
      ...opts.env,
    },
    ports: opts.metricsPort ? [opts.metricsPort] : undefined,
    ready: async () => existsSync(opts.logFile) && readFileSync(opts.logFile, 'utf8').slice(before).includes('worker started'),
  });
}
