// Runs one cookbook worker until SIGINT/SIGTERM: `cookbook worker` on any host, and the process the
// local stack and Dockerfile.worker start (src/workers/main.ts). Temporal settings come from
// cli/connect.ts (flags > TEMPORAL_* env > temporal.toml profile > local defaults).
import { causeChain, connectHint, engineUrl, resolveTemporal, type GlobalFlags } from '../cli/connect.js';
import { ConfigError } from '../cookbook/config/overrides.js';
import { log } from '../cookbook/logging.js';
import { DEFAULT_TASK_QUEUE } from './task-queue.js';
import type { CookbookWorker } from './worker.js';

export interface WorkerFlags extends GlobalFlags {
  maxConcurrentActivities?: number;
  maxConcurrentWorkflows?: number;
  /** Serve Prometheus metrics: a port or HOST:PORT (workers/prometheus.ts); else COOKBOOK_METRICS_PORT. */
  metricsPort?: string;
}

/** parseArgs specs of `cookbook worker`'s own flags. */
export const WORKER_OPTIONS = {
  'max-concurrent-activities': { type: 'string' },
  'max-concurrent-workflows': { type: 'string' },
  'metrics-port': { type: 'string' },
} as const;

export const WORKER_USAGE = `  worker [--task-queue Q]             run a worker on this host (Temporal connection options below, engine
        [--max-concurrent-activities N]     from --engine-url/TINKER_BASE_URL; every worker must see the run
        [--max-concurrent-workflows N]      store's log dirs at the same paths); stops gracefully on Ctrl-C/SIGTERM
        [--metrics-port [HOST:]PORT]        Prometheus metrics at /metrics (COOKBOOK_METRICS_PORT; HOST 127.0.0.1)`;

export function workerFlags(flags: GlobalFlags, v: { [K in keyof typeof WORKER_OPTIONS]?: string }): WorkerFlags {
  return { ...flags, maxConcurrentActivities: positiveInt(v, 'max-concurrent-activities'), maxConcurrentWorkflows: positiveInt(v, 'max-concurrent-workflows'), metricsPort: v['metrics-port'] };
}

function positiveInt(v: Record<string, string | undefined>, name: string): number | undefined {
  const raw = v[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(`--${name} must be a positive integer (got ${raw})`);
  return n;
}

export async function runWorker(f: WorkerFlags): Promise<void> {
  // Loaded here, not at the top: the CLI imports this module for its flags, and its other commands
  // should not pay for the worker (bundler, activities, backends) at every start.
  const [{ apiKeyFor, createCookbookWorker, TemporalConnectError }, { installPrometheus, metricsBindAddress }] = await Promise.all([import('./worker.js'), import('./prometheus.js')]);
  const metricsAddress = metricsBindAddress(f.metricsPort);
  const temporal = resolveTemporal(f);
  const tinkerBaseUrl = engineUrl(f);
  const taskQueue = f.taskQueue ?? process.env.COOKBOOK_TASK_QUEUE ?? DEFAULT_TASK_QUEUE;
  if (!f.engineUrl && !process.env.TINKER_BASE_URL) {
    log.warn({ tinkerBaseUrl }, 'no --engine-url or TINKER_BASE_URL: using the engine on this host');
  }
  await warnIfEngineUnreachable(tinkerBaseUrl, apiKeyFor(tinkerBaseUrl));
  // Before the worker's connection: the Temporal runtime (which serves the metrics) is created once.
  if (metricsAddress) {
    installPrometheus(metricsAddress);
    log.info({ metrics: `http://${metricsAddress}/metrics` }, 'serving Prometheus metrics');
  }

  let cookbookWorker: CookbookWorker;
  try {
    cookbookWorker = await createCookbookWorker({
      temporalAddress: temporal.address,
      connectionOptions: { tls: temporal.tls, apiKey: temporal.apiKey, metadata: temporal.metadata },
      namespace: temporal.namespace,
      taskQueue,
      tinkerBaseUrl,
      maxConcurrentActivityTaskExecutions: f.maxConcurrentActivities,
      maxConcurrentWorkflowTaskExecutions: f.maxConcurrentWorkflows,
    });
  } catch (err) {
    if (err instanceof TemporalConnectError) {
      const why = causeChain(err.cause);
      throw new Error(`cannot reach Temporal at ${temporal.address} (${temporal.description}): ${why}; ${connectHint(temporal, why)}`);
    }
    throw err;
  }
  const { worker, close } = cookbookWorker;
  // The SDK's runtime already turns SIGINT/SIGTERM into worker.shutdown(): polling stops, running
  // activities get shutdownGraceTime to finish, then run() resolves. These handlers only say so.
  const onSignal = (signal: NodeJS.Signals) => log.info({ signal }, 'shutting down: finishing in-flight tasks');
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  log.info(
    { temporalAddress: temporal.address, namespace: temporal.namespace, connection: temporal.description, taskQueue: worker.options.taskQueue, identity: worker.options.identity, tinkerBaseUrl },
    'worker started',
  );
  try {
    await worker.run();
  } finally {
    await close();
    // Rows the runs' activities queued for a capture store go out before the process does.
    for (const line of await (await import('../capture/run-capture.js')).closeRunCapture()) log.info(line);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  log.info('worker stopped');
}

/** Not fatal: the engine may come up later, and activities retry until it does. */
async function warnIfEngineUnreachable(baseUrl: string, apiKey: string | undefined): Promise<void> {
  try {
    await fetch(new URL('api/v1/get_server_capabilities', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`), {
      headers: { 'X-API-Key': apiKey ?? '' },
      signal: AbortSignal.timeout(5_000),
    });
  } catch (err) {
    log.warn({ tinkerBaseUrl: baseUrl, error: (err as Error).message }, 'the training engine is not reachable from this host; activities will retry until it is');
  }
}
