// Prometheus metrics of a worker (#38 item 4), opt-in: `cookbook worker --metrics-port N` or
// COOKBOOK_METRICS_PORT. The Temporal Core SDK then serves http://<address>/metrics: its own
// metrics (temporal_*: polls, task slots, schedule-to-start and execution latencies, …) and the
// project's, created on the same runtime's meter:
//   cookbook_steps_total{workflow_type}          training steps whose metrics row was written
//   cookbook_tokens_total{kind}                  the rows' tokens/<kind> (sampled, prefill_*, trained)
//   cookbook_rollout_groups_total{outcome}       RL trajectory groups recorded: trained or dropped
//   cookbook_rollouts_total                      trajectories of the trained groups
//   cookbook_backend_retries_total{request}      Tinker requests retried by the backend client
// Counters count what this process did: an activity retried after a crash counts again (the run's
// files stay exactly-once; these are rates for dashboards). Off, nothing is created and the hooks
// below return at once.
import { Context } from '@temporalio/activity';
import { Runtime } from '@temporalio/worker';
import type { MetricCounter } from '@temporalio/common';
import type { RetryInfo } from '../backends/config.js';
import { ConfigError } from '../cookbook/config/overrides.js';
import { observeRunStore, type MetricsRow, type RolloutRecord } from '../cookbook/run-store.js';
import { TOKEN_KINDS, TOKEN_METRIC_PREFIX } from '../cookbook/token-usage.js';

interface Counters {
  steps: MetricCounter;
  tokens: MetricCounter;
  rolloutGroups: MetricCounter;
  rollouts: MetricCounter;
  backendRetries: MetricCounter;
}

let counters: Counters | undefined;

/**
 * The address to serve metrics on: `--metrics-port` (or COOKBOOK_METRICS_PORT) as a port, bound to
 * 127.0.0.1, or as HOST:PORT (`0.0.0.0:9464` for a Prometheus on another host); undefined: off.
 */
export function metricsBindAddress(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const raw = (flag ?? env.COOKBOOK_METRICS_PORT)?.trim();
  if (!raw) return undefined;
  const m = /^(?:(.+):)?(\d+)$/.exec(raw);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port >= 1 && port <= 65535)) {
    throw new ConfigError(`--metrics-port / COOKBOOK_METRICS_PORT must be a port (1-65535) or HOST:PORT (got ${raw})`);
  }
  return `${m[1] ?? '127.0.0.1'}:${port}`;
}

/**
 * Installs the Temporal runtime with a Prometheus exporter on `bindAddress` and creates the
 * project's counters. Must run before the process opens any Temporal connection (the runtime is
 * created with the first one, and only once).
 */
export function installPrometheus(bindAddress: string): void {
  Runtime.install({ telemetryOptions: { metrics: { prometheus: { bindAddress } } } });
  const meter = Runtime.instance().metricMeter;
  counters = {
    steps: meter.createCounter('cookbook_steps_total', '', 'Training steps whose metrics row this worker wrote.'),
    tokens: meter.createCounter('cookbook_tokens_total', '', 'Tokens of the steps this worker wrote, by kind (tokens/<kind> in metrics.jsonl).'),
    rolloutGroups: meter.createCounter('cookbook_rollout_groups_total', '', 'RL trajectory groups recorded, by outcome (trained, dropped).'),
    rollouts: meter.createCounter('cookbook_rollouts_total', '', 'Trajectories of the trajectory groups trained on.'),
    backendRetries: meter.createCounter('cookbook_backend_retries_total', '', 'Tinker requests the backend client retried, by request type.'),
  };
  observeRunStore({ metricsRow: countRow, rolloutRecord: countRollouts });
}

/** The backend client's retry hook (worker.ts adds it beside the heartbeat one). */
export function countBackendRetry(info: RetryInfo): void {
  counters?.backendRetries.add(1, { request: info.requestType });
}

/** Keys of RL's closing row, which holds the run's token totals and is no step of its own. */
const TOTALS_ONLY = /^(step|tokens\/(cumulative|discarded)\/.*)$/;

function countRow(row: MetricsRow): void {
  if (!counters) return;
  if (Object.keys(row).every((k) => TOTALS_ONLY.test(k))) return;
  counters.steps.add(1, { workflow_type: workflowType() });
  for (const kind of TOKEN_KINDS) {
    const n = row[`${TOKEN_METRIC_PREFIX}${kind}`];
    if (typeof n === 'number' && n > 0) counters.tokens.add(n, { kind });
  }
}

function countRollouts(record: RolloutRecord): void {
  if (!counters) return;
  for (const group of record.groups) {
    counters.rolloutGroups.add(1, { outcome: group.advantages ? 'trained' : 'dropped' });
    if (group.advantages?.length) counters.rollouts.add(group.advantages.length);
  }
}

/** The workflow kind the row belongs to, from the activity writing it (a bounded label: never the run). */
function workflowType(): string {
  try {
    return Context.current().info.workflowType ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
