// Which settings turn the exporters on (workers/tracing.ts, workers/prometheus.ts): both off by
// default, on only with their variable or flag, and a bad port refused by name.
import { describe, expect, it } from 'vitest';
import { metricsBindAddress } from '../../src/workers/prometheus.js';
import { tracingEnabled } from '../../src/workers/tracing.js';

describe('exporter settings', () => {
  it('traces only with an OTLP endpoint, and not with the SDK disabled', () => {
    expect(tracingEnabled({})).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(true);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
  });

  it('serves metrics only on a port given by flag or variable, on loopback unless a host is named', () => {
    expect(metricsBindAddress(undefined, {})).toBeUndefined();
    expect(metricsBindAddress(undefined, { COOKBOOK_METRICS_PORT: '9464' })).toBe('127.0.0.1:9464');
    expect(metricsBindAddress('9465', { COOKBOOK_METRICS_PORT: '9464' })).toBe('127.0.0.1:9465');
    expect(metricsBindAddress('0.0.0.0:9464', {})).toBe('0.0.0.0:9464');
    for (const bad of ['http', '0', '70000', ':x', '9464:'])
      expect(() => metricsBindAddress(bad, {})).toThrow(`--metrics-port / COOKBOOK_METRICS_PORT must be a port (1-65535) or HOST:PORT (got ${bad})`);
  });
});
