// The real local engine for integration tests, on the shared service launcher (own process group,
// log file, healthz probe), with a temp data dir owned by the handle unless one is given.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEngine as startEngineService, type Service } from '../../src/cli/services.js';
import { onFreePort } from './free-port.js';
import { workerEngine } from './shared-engine.js';
import { timed } from './timing.js';

export interface StartEngineOptions {
  /** Default: a fresh temp dir, removed by stop(). A given dir is kept. */
  dataDir?: string;
  /** Default: a free port (another one if something takes it before the engine binds it). */
  port?: number;
  extraArgs?: string[];
}

export interface EngineHandle {
  baseUrl: string;
  port: number;
  dataDir: string;
  logFile: string;
  /** SIGTERM (SIGKILL after a grace period), then remove an owned temp dir. */
  stop(): Promise<void>;
  /** SIGKILL the engine's process group; the data dir is kept. */
  kill(): Promise<void>;
  /** kill() then start again on the same port and data dir. */
  restart(): Promise<void>;
}

export async function startEngine(opts: StartEngineOptions = {}): Promise<EngineHandle> {
  const ownsDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'tinker-engine-'));
  const given = { dataDir, extraArgs: opts.extraArgs };
  const launch = (port: number) => startEngineService({ ...given, port });
  const started = await timed('engine start', async () =>
    opts.port === undefined ? await onFreePort(given, startEngineService) : { opts: { port: opts.port }, service: await launch(opts.port) },
  );
  const port = started.opts.port;
  let service: Service & { baseUrl: string } = started.service;
  return {
    baseUrl: service.baseUrl,
    port,
    dataDir,
    logFile: service.logFile,
    async stop() {
      await service.stop();
      if (ownsDir) rmSync(dataDir, { recursive: true, force: true });
    },
    kill: () => service.kill(),
    async restart() {
      await service.kill();
      service = await timed('engine start', () => launch(port));
    },
  };
}

/**
 * An engine for a file that kills or restarts none: its worker process's engine of the run's shared
 * stack when there is one (no start-up to pay), else one of its own. stop() stops only its own.
 */
export async function engineForFile(): Promise<FileEngine> {
  const shared = await sharedStackInfo();
  if (shared) return { baseUrl: workerEngine(shared).engineUrl, stop: async () => {} };
  return startEngine();
}

export type FileEngine = Pick<EngineHandle, 'baseUrl' | 'stop'>;

/** None outside vitest: bench/ drives engines too, and importing vitest outside a test run throws. */
async function sharedStackInfo() {
  try {
    return (await import('vitest')).inject('sharedStack');
  } catch {
    return null;
  }
}
