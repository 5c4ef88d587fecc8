// Builds the cookbook worker: the workflow bundle, the activities wired to a Tinker backend, and
// the connection to Temporal. Used by the worker process, the demo and the tests.
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, NativeConnection, Worker, type NativeConnectionOptions, type WorkflowBundle } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/activity';
import { reportBackendRetry } from '../activities/context.js';
import { createActivities } from '../activities/index.js';
import { ErrorTypes } from '../activities/types.js';
import type { TrainingBackend } from '../backends/types.js';
import { createTinkerBackend } from '../backends/index.js';

export const DEFAULT_TASK_QUEUE = 'cookbook';
const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

let bundle: Promise<WorkflowBundle> | undefined;

/** Bundles the workflow code once per process (webpack takes a second or two). */
export function workflowBundle(): Promise<WorkflowBundle> {
  bundle ??= bundleWorkflowCode({ workflowsPath, logger: quietBundlerLogger }).then(({ code }) => ({ code }));
  return bundle;
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

/**
 * The API key for a backend: the given one, else TINKER_API_KEY, else — for an engine on this
 * machine, which accepts any `tml-` key unless started with --api-key — a placeholder.
 */
export function apiKeyFor(baseUrl: string, explicit?: string): string | undefined {
  const key = explicit ?? process.env.TINKER_API_KEY;
  if (key) return key;
  const host = new URL(baseUrl).hostname;
  return host === '127.0.0.1' || host === 'localhost' || host === '[::1]' ? 'tml-local' : undefined;
}

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
  const backendFor = (baseUrl: string | null): TrainingBackend => {
    const url = baseUrl ?? opts.tinkerBaseUrl;
    let backend = backends.get(url);
    if (!backend) {
      try {
        backend = createTinkerBackend({ baseUrl: url, apiKey: apiKeyFor(url, opts.tinkerApiKey), onRetry: reportBackendRetry });
      } catch (err) {
        // A missing or malformed key cannot fix itself on retry.
        throw ApplicationFailure.nonRetryable(`training backend ${url}: ${(err as Error).message}`, ErrorTypes.auth);
      }
      backends.set(url, backend);
    }
    return backend;
  };
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect({ ...opts.connectionOptions, address: opts.temporalAddress });
  } catch (err) {
    throw new TemporalConnectError(opts.temporalAddress, err as Error);
  }
  const worker = await Worker.create({
    connection,
    namespace: opts.namespace ?? 'default',
    taskQueue: opts.taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowBundle: await workflowBundle(),
    activities: createActivities({ backendFor }),
    shutdownGraceTime: opts.shutdownGraceTime ?? '10s',
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivityTaskExecutions ?? 64,
    ...(opts.maxConcurrentWorkflowTaskExecutions ? { maxConcurrentWorkflowTaskExecutions: opts.maxConcurrentWorkflowTaskExecutions } : {}),
  });
  return {
    worker,
    connection,
    async close() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await Promise.all([...backends.values()].map((b) => b.close().catch(() => undefined)));
      await connection.close();
    },
  };
}
