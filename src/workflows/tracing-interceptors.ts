// The workflow side of OpenTelemetry tracing (workers/tracing.ts): a span for each workflow run
// and for each activity it schedules, whose context travels to the activity in Temporal headers.
// Bundled into the workflow code only when tracing is on; spans leave the sandbox through the
// worker's `exporter` sink, so nothing here does I/O or reads a clock of its own.
import type { WorkflowInterceptors } from '@temporalio/workflow';
import { OpenTelemetryInboundInterceptor, OpenTelemetryInternalsInterceptor, OpenTelemetryOutboundInterceptor } from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';

export const interceptors = (): WorkflowInterceptors => ({
  inbound: [new OpenTelemetryInboundInterceptor()],
  outbound: [new OpenTelemetryOutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
