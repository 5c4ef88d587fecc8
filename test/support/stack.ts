// A real local stack for workflow tests: the Temporal dev server (CLI binary), the engine over
// HTTP, and a worker in this process or in its own (for kill tests). Everything binds 127.0.0.1
// on free ports and is torn down by stop(). Files that never kill a server share the run's one
// stack (support/shared-stack.ts: its engine of the worker process they run in) and keep to their
// own task queue, run folders and model ids.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { startEngine, startTemporalServer, startWorkerProcess, type Service } from '../../src/cli/services.js';
import { resolveRun, startRun, type ResolvedRun } from '../../src/cli/train.js';
import { createCookbookWorker } from '../../src/workers/worker.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { onFreePort } from './free-port.js';
import { workerEngine, type SharedStackInfo } from './shared-engine.js';
import { once } from './once.js';
import { timed } from './timing.js';
import type { S3Server } from './s3-server.js';

/** A server of the stack: what tests do with it (the shared stack's cannot be killed). */
export interface StackService {
  logFile: string;
  /** The process, for a stack's own servers. */
  proc?: { pid?: number };
  stop(): Promise<void>;
  kill(): Promise<void>;
}

export interface TestStack {
  dir: string;
  temporal: StackService;
  temporalAddress: string;
  engine: StackService & { baseUrl: string };
  client: Client;
  taskQueue: string;
  /** Restarts the Temporal server on the same SQLite file (requires persist: true). */
  restartTemporal(): Promise<void>;
  /** Starts the engine again on the same port and data dir (after engine.kill()). */
  restartEngine(): Promise<void>;
  stop(): Promise<void>;
}

export interface TestStackOptions {
  /** Temporal keeps its state in a SQLite file, so restartTemporal() finds the runs again. */
  persist?: boolean;
  engineArgs?: string[];
  /**
   * Servers of this file's own, which it may kill and restart. Without it (and without persist or
   * engineArgs) the file runs on the shared stack when the run has one.
   */
  own?: boolean;
}

let counter = 0;

export async function startTestStack(opts: TestStackOptions = {}): Promise<TestStack> {
  const shared = opts.own || opts.persist || opts.engineArgs ? null : await sharedStackInfo();
  return timed('stack start', () => (shared ? sharedStack(shared) : ownStack(opts)));
}

async function ownStack(opts: TestStackOptions): Promise<TestStack> {
  const dir = mkdtempSync(join(tmpdir(), 'cookbook-test-'));
  const [t, e] = await Promise.all([
    onFreePort({ dbFile: opts.persist ? join(dir, 'temporal.sqlite') : undefined, logFile: join(dir, 'temporal.log') }, startTemporalServer),
    onFreePort({ dataDir: join(dir, 'engine'), extraArgs: opts.engineArgs }, startEngine),
  ]);
  const { opts: temporalOpts, service: temporal } = t;
  const { opts: engineOpts, service: engine } = e;
  const temporalAddress = `127.0.0.1:${temporalOpts.port}`;
  const connection = await connect(temporalAddress);
  const stack: TestStack & { temporal: Service; engine: Service & { baseUrl: string } } = {
    dir,
    temporal,
    temporalAddress,
    engine,
    client: new Client({ connection }),
    taskQueue: `test-${process.pid}-${++counter}`,
    async restartTemporal() {
      await stack.temporal.kill();
      stack.temporal = await timed('temporal start', () => startTemporalServer(temporalOpts));
    },
    async restartEngine() {
      await stack.engine.kill();
      stack.engine = await timed('engine start', () => startEngine(engineOpts));
    },
    async stop() {
      await connection.close().catch(() => undefined);
      await Promise.all([stack.temporal.stop(), stack.engine.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return stack;
}

async function sharedStack(info: SharedStackInfo): Promise<TestStack> {
  const { temporalAddress } = info;
  const { engineUrl, engineLog } = workerEngine(info);
  const dir = mkdtempSync(join(tmpdir(), 'cookbook-test-'));
  const connection = await connect(temporalAddress);
  const refuse = (what: string) => async () => {
    throw new Error(`the shared test stack's ${what} cannot be killed or restarted: start this file's own with startTestStack({ own: true })`);
  };
  const foreign = (name: string, logFile: string) => ({ logFile, stop: refuse(name), kill: refuse(name) });
  return {
    dir,
    temporal: foreign('Temporal server', ''),
    temporalAddress,
    engine: { ...foreign('engine', engineLog), baseUrl: engineUrl },
    client: new Client({ connection }),
    taskQueue: `test-${process.pid}-${++counter}`,
    restartTemporal: refuse('Temporal server'),
    restartEngine: refuse('engine'),
    async stop() {
      await connection.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The run's shared stack, if any: none without one, and none outside vitest — bench/ and the chaos
 * command drive stacks too, and importing vitest outside a test run throws.
 */
async function sharedStackInfo() {
  try {
    return (await import('vitest')).inject('sharedStack');
  } catch {
    return null;
  }
}

// A loaded machine can take a while to answer gRPC after the port opens.
const connect = (address: string) => Connection.connect({ address, connectTimeout: '60s' });

/** Resolves a run config like the CLI does, with a fresh log dir inside the stack's temp dir. */
export function testRun(stack: TestStack, configPath: string, overrides: string[] = [], kind = 'sl'): ResolvedRun {
  const id = `${kind}-test-${Date.now()}-${++counter}`;
  return resolveRun(kind, configPath, [...overrides, `log_path=${join(stack.dir, 'runs', id)}`], { workflowId: id });
}

/** Runs `fn` with a worker polling in this process (its backend: the engine, or `tinkerBaseUrl`), then shuts the worker down. */
export async function withWorker<T>(stack: TestStack, fn: () => Promise<T>, opts: { tinkerBaseUrl?: string } = {}): Promise<T> {
  const w = await timed('worker start', () =>
    createCookbookWorker({
      temporalAddress: stack.temporalAddress,
      tinkerBaseUrl: opts.tinkerBaseUrl ?? stack.engine.baseUrl,
      taskQueue: stack.taskQueue,
      tinkerApiKey: 'tml-test',
    }),
  );
  try {
    return await w.worker.runUntil(fn);
  } finally {
    await w.close();
  }
}

export function workerProcess(stack: TestStack, name = 'worker', env: Record<string, string> = {}): Promise<Service> {
  return timed('worker start', () =>
    startWorkerProcess({
      temporalAddress: stack.temporalAddress,
      tinkerBaseUrl: stack.engine.baseUrl,
      taskQueue: stack.taskQueue,
      logFile: join(stack.dir, `${name}.log`),
      env: { TINKER_API_KEY: 'tml-test', ...env },
    }),
  );
}

/** A worker process on a "host" of its own: its own mirror folder for runs in the object store, the store's settings. */
export function storeHostWorker(stack: TestStack, server: S3Server, name: string): Promise<Service> {
  return workerProcess(stack, name, { ...server.env, COOKBOOK_STORE_CACHE: mkdtempSync(join(tmpdir(), `${name}-cache-`)) });
}

export async function runToEnd(stack: TestStack, run: ResolvedRun): Promise<RunResult> {
  const handle = await startRun(stack.client, run, stack.taskQueue);
  return (await handle.result()) as RunResult;
}

/**
 * An uninterrupted run of a config, run on first use and shared by a file's kill tests, each of
 * which compares its crashed run with it. A worker must be polling the stack's task queue then.
 */
export function uninterruptedRun(stack: () => TestStack, config: string, kind = 'sl'): () => Promise<{ clean: ResolvedRun; cleanResult: RunResult }> {
  return once(async () => {
    const clean = testRun(stack(), config, [], kind);
    return { clean, cleanResult: await runToEnd(stack(), clean) };
  });
}

export function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs = 120_000, everyMs = 250): Promise<void> {
  return timed('waits', async () => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await probe().catch(() => false)) return;
      await new Promise((r) => setTimeout(r, everyMs));
    }
    throw new Error(`timed out waiting for ${what}`);
  });
}

/**
 * Waits until an activity of `type` is running on a worker, as the server sees it: a kill test that
 * must land mid-activity kills right after this, not after a guessed sleep that a slower or faster
 * machine turns into a kill between activities.
 */
export async function untilActivityRunning(handle: WorkflowHandle, type: string, timeoutMs = 300_000): Promise<void> {
  const STARTED = 2; // temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
  await waitUntil(
    `a running ${type}`,
    async () => ((await handle.describe()).raw.pendingActivities ?? []).some((a) => Number(a.state) === STARTED && a.activityType?.name === type),
    timeoutMs,
    20,
  );
}
