// OpenTelemetry traces of workers and the CLI (#38 item 3). Off unless OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; then the CLI's workflow starts, each workflow run
// (with its activity schedules), each activity execution and the Tinker requests an activity makes
// (backends/http.ts puts the W3C `traceparent` into their headers; the engine continues the trace)
// are spans of one trace, exported over OTLP/HTTP as JSON. Off, none of the OpenTelemetry SDK is
// even loaded, the workflow bundle has no tracing interceptors and the backend's header injection
// is the OpenTelemetry API's no-op.
import { fileURLToPath } from 'node:url';
import type { WorkerOptions } from '@temporalio/worker';
import type { WorkflowClientInterceptor } from '@temporalio/client';

/** Whether traces are exported: the OpenTelemetry SDKs' own variables decide. */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/** The workflow-side interceptors, bundled into the workflow code only when tracing is on. */
export const WORKFLOW_TRACING_MODULE = fileURLToPath(new URL('../workflows/tracing-interceptors.ts', import.meta.url));

interface Tracing {
  resource: import('@opentelemetry/resources').Resource;
  spanProcessor: import('@opentelemetry/sdk-trace-base').SpanProcessor;
  provider: import('@opentelemetry/sdk-trace-base').BasicTracerProvider;
}

let tracing: Promise<Tracing> | undefined;

/**
 * The process's tracer provider, registered globally once (with the async-hooks context manager,
 * which lets an activity's span reach the HTTP client, and the W3C propagator). `serviceName` is
 * used unless OTEL_SERVICE_NAME is set.
 */
function startTracing(serviceName: string): Promise<Tracing> {
  tracing ??= (async () => {
    const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { Resource }, sdk, { OTLPTraceExporter }] = await Promise.all([
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/core'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/exporter-trace-otlp-http'),
    ]);
    const resource = new Resource({ 'service.name': process.env.OTEL_SERVICE_NAME?.trim() || serviceName });
    // Endpoint, headers and timeout come from the OTEL_EXPORTER_OTLP_* variables.
    const spanProcessor = new sdk.BatchSpanProcessor(new OTLPTraceExporter());
    const provider = new sdk.BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
    const contextManager = new AsyncLocalStorageContextManager().enable();
    provider.register({ contextManager, propagator: new W3CTraceContextPropagator() });
    return { resource, spanProcessor, provider };
  })();
  return tracing;
}

/** How long an exit waits for buffered spans: a collector that is down must not hold up the CLI. */
const FLUSH_LIMIT_MS = 3_000;

/** Sends the spans still buffered (before a CLI command exits; a worker's close). No-op when tracing never started. */
export async function flushTracing(): Promise<void> {
  if (!tracing) return;
  const { provider } = await tracing;
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, FLUSH_LIMIT_MS)));
  await Promise.race([provider.forceFlush().catch(() => undefined), limit]);
  clearTimeout(timer);
}

/** The worker options that trace workflows and activities, or undefined when tracing is off. */
export async function workerTracingOptions(): Promise<Pick<WorkerOptions, 'interceptors' | 'sinks'> | undefined> {
  if (!tracingEnabled()) return undefined;
  const { resource, spanProcessor } = await startTracing('cookbook-worker');
  const otel = await import('@temporalio/interceptors-opentelemetry/lib/worker/index.js');
  return {
    interceptors: {
      activity: [(ctx) => ({ inbound: new otel.OpenTelemetryActivityInboundInterceptor(ctx), outbound: new otel.OpenTelemetryActivityOutboundInterceptor(ctx) })],
    },
    // Workflow code cannot export: its spans leave the sandbox through this sink (not on replay).
    sinks: { exporter: otel.makeWorkflowExporter(spanProcessor, resource) },
  };
}

/** The client interceptors of the CLI: its workflow starts and signals become the root of their runs' traces. */
export async function clientTracingInterceptors(): Promise<WorkflowClientInterceptor[]> {
  if (!tracingEnabled()) return [];
  await startTracing('cookbook-cli');
  const { OpenTelemetryWorkflowClientInterceptor } = await import('@temporalio/interceptors-opentelemetry/lib/client/index.js');
  return [new OpenTelemetryWorkflowClientInterceptor()];
}
