// #38 items 3 and 4 on the real stack (Temporal dev server, the engine over HTTP, a worker process):
// with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a real OTLP receiver, one SL step started by
// `cookbook train` is one trace from the CLI's start through the workflow run and its activities to
// the engine's request spans, every parent link intact; with COOKBOOK_METRICS_PORT the worker serves the Temporal SDK's and the project's
// Prometheus metrics, and the engine its /metrics, both scraped while a run is in flight.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngine, startWorkerProcess, type Service, type WorkerProcessOpts } from '../../src/cli/services.js';
import { sendControl } from '../../src/cli/runs.js';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { cookbookOn } from '../support/cli.js';
import { onFreePort } from '../support/free-port.js';
import { encodeProtobuf, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { startTestStack, testRun, waitUntil, type TestStack } from '../support/stack.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');

/** A Prometheus text exposition as {`name{labels}`: value}. */
async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    samples.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return samples;
}

/** The sum of a metric's samples whose labels include every `labels` pair. */
function total(samples: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [key, v] of samples) {
    const brace = key.indexOf('{');
    if ((brace < 0 ? key : key.slice(0, brace)) !== name) continue;
    if (Object.entries(labels).every(([k, val]) => key.includes(`${k}="${val}"`))) sum += v;
  }
  return sum;
}

describe('traces and metrics', () => {
  let stack: TestStack;
  let receiver: OtlpReceiver;
  let engine: Service & { baseUrl: string };
  let worker: Service;
  let metricsPort: number;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    stack = await startTestStack();
    // An engine of this file's own: the shared one exports no spans.
    engine = (
      await onFreePort(
        { dataDir: join(stack.dir, 'engine'), env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: 'tinker-engine' } },
        startEngine,
      )
    ).service;
    // A worker process: tracing and the Temporal runtime's metrics are set up once per process. Its
    // metrics server binds a port chosen free, and is started again on another if that one was lost.
    const served = await onFreePort(
      {
        temporalAddress: stack.temporalAddress,
        tinkerBaseUrl: engine.baseUrl,
        taskQueue: stack.taskQueue,
        logFile: join(stack.dir, 'worker.log'),
        env: { TINKER_API_KEY: 'tml-test', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '200' },
      },
      ({ port, ...opts }: WorkerProcessOpts & { port: number }) => startWorkerProcess({ ...opts, metricsPort: port }),
    );
    [worker, metricsPort] = [served.service, served.opts.port];
  });
  afterAll(async () => {
    await worker?.stop();
    await engine?.stop();
    await stack?.stop();
    await receiver?.close();
  });

  it('the OTLP receiver reads the protobuf encoding as well as JSON', async () => {
    const span = { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8), parentSpanId: 'ef'.repeat(8), name: 'probe', kind: 2, startNs: 5n, endNs: 9n, attributes: { a: 'b' } };
    const res = await fetch(`${receiver.endpoint}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: encodeProtobuf('probe-service', [span]) });
    expect(res.status).toBe(200);
    expect(receiver.spans.find((s) => s.name === 'probe')).toEqual({ ...span, service: 'probe-service' });
    const bad = await fetch(`${receiver.endpoint}/v1/traces`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect(bad.status).toBe(400);
    receiver.errors.length = 0;
  });

  it('one SL step is one trace: the CLI start, the workflow run, its activities, the engine requests they made', async () => {
    // `cookbook train` as a user runs it, tracing too; the worker and engine of this file.
    const logPath = join(stack.dir, 'runs', 'traced');
    const cli = await cookbookOn({ ...stack, engine }, ['train', 'sl', join(fixtures, 'sl_small.json'), 'max_steps=1', 'eval_every=0', `log_path=${logPath}`, '--wait'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    });
    expect(cli.code, cli.err).toBe(0);
    expect(new RunStore(logPath).readMetrics().map((r) => r.step)).toEqual([0]);

    const byId = (): Map<string, ReceivedSpan> => new Map(receiver.spans.map((s) => [s.spanId, s]));
    const start = () => receiver.spans.find((s) => s.name === 'StartWorkflow:supervisedWorkflow' && s.service === 'cookbook-cli');
    // The worker's spans go out in batches (every 200 ms here), the workflow run's when it ends, and
    // the engine's in batches of their own: the step's requests may arrive in different ones.
    const engineRequests = ['engine CreateModel', 'engine ForwardBackward', 'engine OptimStep'];
    await waitUntil('the CLI, workflow, activity and engine spans', async () => {
      const requests = engineRequests.map((name) => receiver.spans.find((s) => s.service === 'tinker-engine' && s.name === name));
      const run = receiver.spans.find((s) => s.name === 'RunWorkflow:supervisedWorkflow');
      return Boolean(start() && run && requests.every((r) => r && byId().has(r.parentSpanId)));
    }, 60_000);
    expect(receiver.errors).toEqual([]);

    const spans = byId();
    const root = start()!;
    expect(root.parentSpanId).toBe('');
    const trace = receiver.spans.filter((s) => s.traceId === root.traceId);
    const chain = (s: ReceivedSpan): ReceivedSpan[] => (s.parentSpanId ? [s, ...chain(spans.get(s.parentSpanId)!)] : [s]);
    // Every span of the trace hangs off the CLI's start, parent by parent, with no link broken.
    for (const s of trace) {
      if (s.parentSpanId) expect(spans.has(s.parentSpanId), `parent of ${s.service}/${s.name}`).toBe(true);
      expect(chain(s).at(-1)).toBe(root);
    }
    const run = trace.find((s) => s.name === 'RunWorkflow:supervisedWorkflow')!;
    expect(run.service).toBe('cookbook-worker');
    expect(spans.get(run.parentSpanId)).toBe(root);

    // The engine's training requests of the step, each under the activity execution that made it,
    // that under its schedule by the workflow run.
    const engineSpans = trace.filter((s) => s.service === 'tinker-engine' && s.name.startsWith('engine '));
    const names = new Set(engineSpans.map((s) => s.name));
    for (const name of engineRequests) expect(names).toContain(name);
    for (const request of engineSpans) {
      const [, activity, scheduled, ...rest] = chain(request);
      expect(activity.service).toBe('cookbook-worker');
      expect(activity.name).toMatch(/^RunActivity:/);
      expect(scheduled.name).toBe(activity.name.replace('RunActivity', 'StartActivity'));
      expect(rest).toContain(run);
      expect(request.startNs >= activity.startNs && request.startNs <= activity.endNs).toBe(true);
      // A request's span covers its queueing and then its compute.
      const kids = trace.filter((s) => s.parentSpanId === request.spanId);
      const queue = kids.find((s) => s.name === 'queue')!;
      expect(queue.startNs).toBe(request.startNs);
      const compute = kids.find((s) => s.name === 'compute');
      if (compute) {
        expect(compute.startNs).toBe(queue.endNs);
        expect(compute.endNs).toBe(request.endNs);
      }
    }
    // The step's forward_backward came from an SL activity.
    expect(chain(engineSpans.find((s) => s.name === 'engine ForwardBackward')!)[1].name).toMatch(/^RunActivity:sl/);
  });

  it('the worker and the engine serve Prometheus metrics while a run is in flight', async () => {
    const run = testRun(stack, join(fixtures, 'sl_small.json'), ['num_epochs=20', 'eval_every=0']);
    const handle = await startRun(stack.client, run, stack.taskQueue);
    const store = new RunStore(run.run.logPath);
    await waitUntil('two steps written', async () => store.readMetrics().length >= 2);

    // The worker's counters reach its exporter through the Temporal runtime a moment after the row
    // is written (CI once scraped between the two), so poll until the two rows show.
    const trained = store.readMetrics().slice(0, 2).reduce((n, r) => n + Number(r['tokens/trained']), 0);
    expect(trained).toBeGreaterThan(0);
    let workerMetrics = new Map<string, number>();
    let engineMetrics = new Map<string, number>();
    await waitUntil('the two steps counted by the worker', async () => {
      [workerMetrics, engineMetrics] = await Promise.all([scrape(`http://127.0.0.1:${metricsPort}/metrics`), scrape(`${engine.baseUrl}/metrics`)]);
      return total(workerMetrics, 'cookbook_tokens_total', { kind: 'trained' }) >= trained;
    }, 30_000);
    expect((await handle.describe()).status.name).toBe('RUNNING');

    // The Temporal SDK's own metrics, and the project's.
    expect(total(workerMetrics, 'temporal_worker_task_slots_available', { worker_type: 'ActivityWorker' })).toBeGreaterThan(0);
    expect(total(workerMetrics, 'temporal_activity_execution_latency_count')).toBeGreaterThan(0);
    expect(total(workerMetrics, 'cookbook_steps_total', { workflow_type: 'supervisedWorkflow' })).toBeGreaterThanOrEqual(2);
    // The engine's: requests, tokens trained, batch sizes, the process's memory.
    expect(total(engineMetrics, 'tinker_engine_requests_total', { type: 'ForwardBackward', outcome: 'done' })).toBeGreaterThanOrEqual(2);
    expect(total(engineMetrics, 'tinker_engine_trained_tokens_total')).toBeGreaterThan(0);
    expect(total(engineMetrics, 'tinker_engine_batch_size_count', { type: 'ForwardBackward' })).toBeGreaterThanOrEqual(2);
    expect(engineMetrics.has('tinker_engine_models')).toBe(true);
    expect(total(engineMetrics, 'process_resident_memory_bytes')).toBeGreaterThan(0);

    await sendControl(stack.client, run.workflowId, 'stop');
    await handle.result();
    const after = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(total(after, 'cookbook_steps_total', { workflow_type: 'supervisedWorkflow' })).toBeGreaterThanOrEqual(total(workerMetrics, 'cookbook_steps_total', { workflow_type: 'supervisedWorkflow' }));
  });

  it('counts the steps, sampled tokens and rollouts of an RL run as its files record them', async () => {
    const run = testRun(stack, join(fixtures, 'rl_small.json'), ['max_steps=2'], 'rl');
    await (await startRun(stack.client, run, stack.taskQueue)).result();
    const store = new RunStore(run.run.logPath);
    // Step rows, without RL's closing row of token totals.
    const rows = store.readMetrics().filter((r) => r['tokens/sampled'] !== undefined);
    const groups = store.readRolloutRecords().flatMap((r) => r.groups);
    const sampledTokens = rows.reduce((n, r) => n + Number(r['tokens/sampled']), 0);
    let m = new Map<string, number>();
    // Polled: the counters reach the exporter a moment after the files are written.
    await waitUntil('the run counted by the worker', async () => {
      m = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
      return total(m, 'cookbook_tokens_total', { kind: 'sampled' }) >= sampledTokens && total(m, 'cookbook_rollout_groups_total') >= groups.length;
    }, 30_000);
    // At least what the files hold: an activity retried on a loaded machine counts again.
    expect(total(m, 'cookbook_steps_total', { workflow_type: 'rlWorkflow' })).toBeGreaterThanOrEqual(rows.length);
    const sampled = rows.reduce((n, r) => n + Number(r['tokens/sampled']), 0);
    expect(sampled).toBeGreaterThan(0);
    expect(total(m, 'cookbook_tokens_total', { kind: 'sampled' })).toBeGreaterThanOrEqual(sampled);
    expect(total(m, 'cookbook_rollout_groups_total')).toBeGreaterThanOrEqual(groups.length);
    expect(total(m, 'cookbook_rollout_groups_total', { outcome: 'trained' })).toBeGreaterThanOrEqual(groups.filter((g) => g.advantages).length);
    expect(total(m, 'cookbook_rollouts_total')).toBeGreaterThanOrEqual(groups.reduce((n, g) => n + (g.advantages?.length ?? 0), 0));
    expect(rows).toHaveLength(2);
    expect(groups).toHaveLength(2 * 3);
  });
});
