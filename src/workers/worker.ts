// Builds the cookbook worker: the workflow bundle, the activities wired to a Tinker backend, and
// the connection to Temporal. Used by the worker process, the demo and the tests.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, NativeConnection, Worker, type NativeConnectionOptions, type WorkflowBundle } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/activity';
import { reportBackendRetry, reportFutureWait } from '../activities/context.js';
import { createActivities } from '../activities/index.js';
import { ErrorTypes } from '../activities/types.js';
import { type RetryInfo, WIRE_NAMES, type WireName } from '../backends/config.js';
import type { TrainingBackend } from '../backends/types.js';
import { createTinkerBackend, SamplerPool, type TinkerBackend } from '../backends/index.js';
import type { SamplerPoolConfig } from '../cookbook/config/common.js';
import { countBackendRetry } from './prometheus.js';
import { DEFAULT_TASK_QUEUE } from './task-queue.js';
import { apiKeyFor } from '../backends/api-key.js';
import { flushTracing, WORKFLOW_TRACING_MODULE, workerTracingOptions } from './tracing.js';

export { DEFAULT_TASK_QUEUE };
const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/** How long a pool engine's client retries before the pool sends the request to another engine. */
const POOL_ENGINE_RETRY_BUDGET_MS = 3_000;
/** How long one request may find every pool engine failing before its activity fails (and retries). */
const POOL_REQUEST_BUDGET_MS = 5 * 60_000;

const srcDir = fileURLToPath(new URL('..', import.meta.url));

const bundles = new Map<boolean, Promise<WorkflowBundle>>();

/**
 * Bundles the workflow code once per process (webpack takes a few seconds on a busy machine). With
 * COOKBOOK_WORKFLOW_BUNDLE_CACHE naming a folder, processes share one bundle there (the test suite
 * starts hundreds of workers), keyed by every source file the bundle could include and the SDK's
 * version, so any change to either bundles again. `traced`: with the OpenTelemetry workflow
 * interceptors (workers/tracing.ts), a bundle of its own.
 */
export function workflowBundle(traced = false): Promise<WorkflowBundle> {
  let bundle = bundles.get(traced);
  if (!bundle) bundles.set(traced, (bundle = cachedBundle(process.env.COOKBOOK_WORKFLOW_BUNDLE_CACHE, traced)));
  return bundle;
}

async function cachedBundle(cacheDir: string | undefined, traced: boolean): Promise<WorkflowBundle> {
  const build = () =>
    bundleWorkflowCode({ workflowsPath, logger: quietBundlerLogger, ...(traced ? { workflowInterceptorModules: [WORKFLOW_TRACING_MODULE] } : {}) }).then(({ code }) => ({ code }));
  if (!cacheDir) return build();
  const file = join(cacheDir, `workflows-${traced ? 'otel-' : ''}${bundleKey()}.js`);
  try {
    return { code: readFileSync(file, 'utf8') };
  } catch {
    const fresh = await build();
    // Written under a name of its own and renamed: a reader never sees half a bundle.
    mkdirSync(cacheDir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, fresh.code);
    renameSync(tmp, file);
    return fresh;
  }
}

/** The bundle's inputs: every file under src/ (workflows import the cookbook library) and the SDK version. */
function bundleKey(): string {
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else hash.update(path).update(readFileSync(path));
    }
  };
  walk(srcDir);
  hash.update(JSON.parse(readFileSync(join(srcDir, '..', 'node_modules', '@temporalio', 'workflow', 'package.json'), 'utf8')).version);
  return hash.digest('hex').slice(0, 16);
}

const quietBundlerLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn(message: string, meta?: unknown) {
    console.error(message, meta ?? '');
  },
  error(message: string, meta?: unknown) {
    console.error(message, meta ?? '');
  },
};

export { apiKeyFor };

export interface CookbookWorkerOptions {
  temporalAddress: string;
  /** TLS, API key and gRPC metadata for a secured cluster (resolved by cli/connect.ts). */
  connectionOptions?: Omit<NativeConnectionOptions, 'address'>;
  namespace?: string;
  taskQueue?: string;
  /** Default backend for runs whose config has no base_url. */
  tinkerBaseUrl: string;
  /** Read from TINKER_API_KEY by default; never put in a workflow payload. */
  tinkerApiKey?: string;
  shutdownGraceTime?: string;
  maxConcurrentActivityTaskExecutions?: number;
  maxConcurrentWorkflowTaskExecutions?: number;
}

/** The worker could not open its connection (as opposed to failing later): callers add advice. */
export class TemporalConnectError extends Error {
  constructor(
    readonly address: string,
    cause: Error,
  ) {
    super(`cannot reach Temporal at ${address}: ${cause.message}`, { cause });
    this.name = 'TemporalConnectError';
  }
}

export interface CookbookWorker {
  worker: Worker;
  connection: NativeConnection;
  /** Shuts the worker down and closes backend clients and the connection. */
  close(): Promise<void>;
}

export async function createCookbookWorker(opts: CookbookWorkerOptions): Promise<CookbookWorker> {
  const backends = new Map<string, TrainingBackend>();
  const backendFor = (baseUrl: string | null, wire?: WireName | null): TrainingBackend => {
    const url = baseUrl ?? opts.tinkerBaseUrl;
    // A run's `wire` gets a client of its own; without one, the client follows TINKER_WIRE.
    const key = wire ? `${url} ${wire}` : url;
    let backend = backends.get(key);
    if (!backend) {
      try {
        const onRetry = (info: RetryInfo) => {
          reportBackendRetry(info);
          countBackendRetry(info);
        };
        backend = createTinkerBackend({
          baseUrl: url,
          apiKey: apiKeyFor(url, opts.tinkerApiKey),
          ...(wire ? { encoding: WIRE_NAMES[wire] } : {}),
          onRetry,
          onFutureWait: reportFutureWait,
        });
      } catch (err) {
        // A missing or malformed key cannot fix itself on retry.
        throw ApplicationFailure.nonRetryable(`training backend ${url}: ${(err as Error).message}`, ErrorTypes.auth);
      }
      backends.set(key, backend);
    }
    return backend;
  };
  // One pool per pool config per worker: its engines' concurrency bound holds across the worker's runs.
  const pools = new Map<string, SamplerPool>();
  const poolClients: TrainingBackend[] = [];
  const samplerPoolFor = (baseUrl: string | null, cfg: SamplerPoolConfig): SamplerPool => {
    const trainer = baseUrl ?? opts.tinkerBaseUrl;
    const key = JSON.stringify([trainer, cfg]);
    let pool = pools.get(key);
    if (!pool) {
      const engines = cfg.base_urls.map((url) => {
        // Clients of their own that give up on an engine in seconds: the pool sends the request elsewhere.
        const client = createTinkerBackend({ baseUrl: url, apiKey: apiKeyFor(url, opts.tinkerApiKey), retry: { budgetMs: POOL_ENGINE_RETRY_BUDGET_MS, maxDelayMs: 1_000 } });
        poolClients.push(client);
        return client;
      });
      const source = backendFor(trainer) as TinkerBackend;
      pool = new SamplerPool(source, engines, {
        maxInFlight: cfg.max_in_flight,
        retryAfterMs: cfg.retry_after_s * 1000,
        budgetMs: POOL_REQUEST_BUDGET_MS,
        importTtlSeconds: cfg.import_ttl_s,
        onEvent: (e) => console.log(`[sampler pool] ${JSON.stringify(e)}`),
      });
      pools.set(key, pool);
    }
    return pool;
  };
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect({ ...opts.connectionOptions, address: opts.temporalAddress });
  } catch (err) {
    throw new TemporalConnectError(opts.temporalAddress, err as Error);
  }
  // OTEL_EXPORTER_OTLP_ENDPOINT set: trace workflows and activities (undefined otherwise).
  const tracing = await workerTracingOptions();
  const worker = await Worker.create({
    ...tracing,
    connection,
    namespace: opts.namespace ?? 'default',
    taskQueue: opts.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowBundle: await workflowBundle(tracing !== undefined),
    activities: createActivities({ backendFor, samplerPoolFor }),
    shutdownGraceTime: opts.shutdownGraceTime ?? '10s',
    // A workflow task goes first to the sticky queue of the worker that ran the workflow last; when
    // that worker was killed, the task waits this long before any other worker may take it. The SDK's
    // 10 s added ten idle seconds to every recovery from a killed worker; a worker that lives polls its
    // sticky queue all the time, and a miss costs one replay of a history continue-as-new keeps short.
    stickyQueueScheduleToStartTimeout: '2s',
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivityTaskExecutions ?? 64,
    ...(opts.maxConcurrentWorkflowTaskExecutions ? { maxConcurrentWorkflowTaskExecutions: opts.maxConcurrentWorkflowTaskExecutions } : {}),
  });
  return {
    worker,
    connection,
    async close() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await Promise.all([...backends.values(), ...poolClients].map((b) => b.close().catch(() => undefined)));
      await connection.close();
      await flushTracing();
    },
  };
}
