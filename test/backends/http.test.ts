import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY } from '../../src/backends/config.js';
import { backoffMs, isDefinitiveConflict, isRetryableStatus, joinUrl, kindForStatus, retryAfterMs, type HttpResponse } from '../../src/backends/http.js';

const res = (status: number, body = '', headers: Record<string, string> = {}): HttpResponse => ({
  status,
  headers: new Headers(headers),
  body: Buffer.from(body),
  contentType: headers['content-type'] ?? '',
});

describe('http helpers', () => {
  it('appends endpoint paths to the base path (§1.1) and keeps ids with ":" raw', () => {
    expect(joinUrl('https://h/services/tinker-prod', '/api/v1/healthz')).toBe('https://h/services/tinker-prod/api/v1/healthz');
    expect(joinUrl('https://h/services/tinker-prod/', '/api/v1/healthz')).toBe('https://h/services/tinker-prod/api/v1/healthz');
    expect(joinUrl('http://127.0.0.1:9', '/api/v1/training_runs/s:train:0/checkpoints')).toBe('http://127.0.0.1:9/api/v1/training_runs/s:train:0/checkpoints');
  });

  it('parses Retry-After-Ms, Retry-After seconds and dates, ignoring values outside (0, 60 s]', () => {
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '250' }), DEFAULT_RETRY)).toBe(250);
    expect(retryAfterMs(new Headers({ 'retry-after': '2' }), DEFAULT_RETRY)).toBe(2000);
    const date = new Date(Date.now() + 5_000).toUTCString();
    const fromDate = retryAfterMs(new Headers({ 'retry-after': date }), DEFAULT_RETRY)!;
    expect(fromDate).toBeGreaterThan(3_000);
    expect(fromDate).toBeLessThanOrEqual(5_000);
    expect(retryAfterMs(new Headers({ 'retry-after': '0' }), DEFAULT_RETRY)).toBeUndefined();
    expect(retryAfterMs(new Headers({ 'retry-after': '120' }), DEFAULT_RETRY)).toBeUndefined();
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }), DEFAULT_RETRY)).toBeUndefined();
  });

  it('backoff grows to its cap with at most 25 % jitter', () => {
    for (let n = 0; n < 8; n++) {
      const d = backoffMs(n, 500, 10_000);
      const raw = Math.min(500 * 2 ** n, 10_000);
      expect(d).toBeGreaterThan(raw * 0.75 - 1e-9);
      expect(d).toBeLessThanOrEqual(raw);
    }
  });

  it('retries exactly the §6 statuses; 409 depends on its body; x-should-retry overrides', () => {
    for (const s of [408, 429, 500, 502, 503, 504]) expect(isRetryableStatus(res(s, '{}')), String(s)).toBe(true);
    for (const s of [400, 401, 403, 404, 410, 422]) expect(isRetryableStatus(res(s, '{"detail":"x"}')), String(s)).toBe(false);
    expect(isRetryableStatus(res(400))).toBe(true); // bodiless 400 = proxy glitch
    expect(isDefinitiveConflict(res(409, '{"detail":"seq_id 3 reused with a different payload"}'))).toBe(true);
    expect(isRetryableStatus(res(409, '{"detail":"seq_id 3 reused"}'))).toBe(false);
    expect(isRetryableStatus(res(409))).toBe(true);
    expect(isRetryableStatus(res(409, '<html>conflict</html>'))).toBe(true);
    expect(isRetryableStatus(res(409, '{"detail":"busy"}', { 'x-should-retry': 'true' }))).toBe(true);
    expect(isRetryableStatus(res(503, '{}', { 'x-should-retry': 'false' }))).toBe(false);
    expect(isRetryableStatus(res(404, '{}', { 'x-should-retry': 'true' }))).toBe(true);
  });

  it('maps statuses to error kinds', () => {
    expect([404, 409, 401, 403, 410, 400, 422, 500, 418].map(kindForStatus)).toEqual([
      'not_found',
      'conflict',
      'auth',
      'auth',
      'expired',
      'bad_request',
      'bad_request',
      'server',
      'other',
    ]);
  });
});
