// The wire of a durable SL run against an engine that refuses protobuf bodies (--refuse-protobuf,
// as hatchery-core answers them: a 500): a run whose config says `wire: json` sends no protobuf
// body at all (the config key reaches the worker's client); a run with the default sends one, is
// refused, and trains on in JSON instead of retrying the 500 forever, with the same metrics.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forgetServerDialects } from '../../src/backends/config.js';
import { metricsOf } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ own: true, engineArgs: ['--refuse-protobuf'] });
});
afterAll(async () => {
  await stack?.stop();
  forgetServerDialects();
});

describe('SL on a server that refuses protobuf bodies', () => {
  it('wire=json sends JSON only; the default falls back after one refused body and trains the same', async () => {
    const sent: string[] = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = (async (url: string | URL | Request, init?: RequestInit) => {
      if (/\/api\/v1\/forward(_backward)?$/.test(String(url))) sent.push(((init?.headers ?? {}) as Record<string, string>)['Content-Type']);
      return realFetch(url, init);
    }) as typeof fetch;
    try {
      await withWorker(stack, async () => {
        const json = testRun(stack, config, ['num_epochs=1', 'wire=json']);
        expect((await runToEnd(stack, json)).status).toBe('completed');
        const jsonBodies = sent.splice(0);
        expect(jsonBodies.length).toBeGreaterThan(0);
        expect(jsonBodies.every((t) => t === 'application/json')).toBe(true);

        const fallback = testRun(stack, config, ['num_epochs=1']);
        expect((await runToEnd(stack, fallback)).status).toBe('completed');
        expect(sent[0]).toBe('application/x-protobuf');
        expect(sent.slice(1).every((t) => t === 'application/json')).toBe(true);
        expect(metricsOf(fallback.run.logPath)).toEqual(metricsOf(json.run.logPath));
      });
    } finally {
      globalThis.fetch = realFetch;
    }
  });
});
