// The SandboxFusion client against a real run_code server: the local sandbox behind the same HTTP
// API. Requests carry the reference client's payload; answers map to (success, response) as the
// reference's do, with HTTP errors and sandbox errors as `{error}`. A server out of reach (refused or
// dropped connections, 502/503/504) is retried with backoff until it answers — a server killed and
// restarted costs a wait, not a verdict — and past the retry window run() throws.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSandbox } from '../../src/cookbook/sandbox/local.js';
import { startSandboxServer, type SandboxServer } from '../../src/cookbook/sandbox/server.js';
import { DEFAULT_SANDBOX_URL, SandboxFusionClient, type SandboxRetryInfo } from '../../src/cookbook/sandbox/sandboxfusion.js';
import { SandboxUnreachableError, type RunCodeRequest, type RunCodeResponse } from '../../src/cookbook/sandbox/types.js';

/** The local sandbox, noting what each request asked and how many ran at once. */
class ObservedSandbox extends LocalSandbox {
  requests: RunCodeRequest[] = [];
  running = 0;
  maxRunning = 0;
  override async runCode(request: RunCodeRequest): Promise<RunCodeResponse> {
    this.requests.push(request);
    this.maxRunning = Math.max(this.maxRunning, ++this.running);
    try {
      return await super.runCode(request);
    } finally {
      this.running--;
    }
  }
}

// Without namespaces the local sandbox refuses by name (test/sandbox/local-sandbox.test.ts checks that).
const unavailable = await new LocalSandbox().available().then(() => false, () => true);

let sandbox: ObservedSandbox;
let server: SandboxServer;
beforeAll(async () => {
  if (unavailable) return;
  sandbox = new ObservedSandbox();
  server = await startSandboxServer({ sandbox });
});
afterAll(async () => {
  await server?.close();
});

describe.skipIf(unavailable)('SandboxFusionClient', () => {
  it('sends code, base64 files and whole-second run_timeout; a clean run is a success', async () => {
    const client = new SandboxFusionClient({ url: server.url });
    const [ok, response] = await client.run('import sys\nprint(open("in.txt").read()[::-1]); sys.stderr.write("note")', { 'in.txt': 'olleh ✓' }, 4.7);
    expect(sandbox.requests.at(-1)).toEqual({ code: expect.any(String), language: 'python', run_timeout: 4, files: { 'in.txt': Buffer.from('olleh ✓').toString('base64') } });
    expect(ok).toBe(true);
    expect(response).toMatchObject({ status: 'Success', run_result: { status: 'Finished', return_code: 0, stdout: '✓ hello\n', stderr: 'note' } });
  });

  it('a failing program is (false, response) with the run result', async () => {
    const [ok, response] = await new SandboxFusionClient({ url: server.url }).run('import sys; sys.exit(2)', {}, 5);
    expect(ok).toBe(false);
    expect(response).toMatchObject({ status: 'Failed', run_result: { return_code: 2 } });
  });

  it('at most SANDBOX_MAX_CONCURRENCY requests at a time, the rest queued', async () => {
    process.env.SANDBOX_URL = server.url;
    process.env.SANDBOX_MAX_CONCURRENCY = '2';
    try {
      const client = new SandboxFusionClient();
      expect(client.url).toBe(server.url);
      sandbox.maxRunning = 0;
      const results = await Promise.all([0, 1, 2, 3, 4].map((i) => client.run(`import time; time.sleep(0.3); print(${i})`, {}, 10)));
      expect(results.map(([ok, r]) => [ok, (r as RunCodeResponse).run_result?.stdout])).toEqual([0, 1, 2, 3, 4].map((i) => [true, `${i}\n`]));
      expect(sandbox.maxRunning).toBe(2);
    } finally {
      delete process.env.SANDBOX_URL;
      delete process.env.SANDBOX_MAX_CONCURRENCY;
    }
    expect(new SandboxFusionClient().url).toBe(DEFAULT_SANDBOX_URL);
  });

  it("the server's SandboxError and an HTTP error come back as {error}; a server that stays unreachable past the retry window throws", async () => {
    const [ok1, r1] = await new SandboxFusionClient({ url: server.url }).run('print(1)', {}, 5, 'cobol');
    expect(ok1).toBe(false);
    expect(r1).toMatchObject({ status: 'SandboxError', error: 'language "cobol" is not supported by the local sandbox (python, bash)' });

    const [ok2, r2] = await new SandboxFusionClient({ url: server.url.replace('/run_code', '/nope') }).run('print(1)', {}, 5);
    expect(ok2).toBe(false);
    expect(r2).toEqual({ error: 'HTTP 404: {"detail":"Not Found"}' });

    await server.close();
    const retries: SandboxRetryInfo[] = [];
    const started = Date.now();
    const gone = new SandboxFusionClient({ url: server.url, retryForSeconds: 0.6, retryInitialDelaySeconds: 0.1, onRetry: (r) => retries.push(r) }).run('print(1)', {}, 5);
    await expect(gone).rejects.toThrow(SandboxUnreachableError);
    await expect(gone).rejects.toThrow(/^sandbox http:\/\/127\.0\.0\.1:\d+\/run_code unreachable for 1 s \(ECONNREFUSED; \d+ tries; SANDBOX_RETRY_SECONDS=0\.6\)$/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    // A kept-alive connection to the closed server may fail first as a closed socket.
    expect(retries.map((r) => r.attempt)).toEqual(retries.map((_, i) => i + 1));
    expect(retries.slice(1).map((r) => r.reason)).toEqual(retries.slice(1).map(() => 'ECONNREFUSED'));
    // Doubling from the first delay; the last wait ends with the window.
    expect(retries.slice(0, 2).map((r) => r.delayMs)).toEqual([100, 200]);
    expect(retries.at(-1)!.failingForMs + retries.at(-1)!.delayMs).toBeLessThanOrEqual(600);
    server = await startSandboxServer({ sandbox });
  });

  it('a server killed and started again on its port: the request waits (backing off) and gets the new server\'s answer', async () => {
    const port = Number(new URL(server.url).port);
    await server.close();
    const retries: SandboxRetryInfo[] = [];
    const pending = new SandboxFusionClient({ url: server.url, retryInitialDelaySeconds: 0.05, retryMaxDelaySeconds: 0.2, onRetry: (r) => retries.push(r) }).run('print(6 * 7)', {}, 5);
    // The server comes back once the client has backed off a few times (counted, not timed).
    while (retries.length <= 2) await new Promise((resolve) => setTimeout(resolve, 20));
    server = await startSandboxServer({ sandbox, port });
    const [ok, response] = await pending;
    expect(ok).toBe(true);
    expect(response).toMatchObject({ status: 'Success', run_result: { stdout: '42\n' } });
    expect(retries.at(-1)!.reason).toBe('ECONNREFUSED');
  });

  it('a connection dropped mid-request and a 503 from a proxy are retried; a 500 is an answer, as the reference reads it', async () => {
    let hits = 0;
    const fake = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hits++;
        if (hits === 1) return req.socket.destroy(); // the server died with the request in flight
        if (hits === 2) return res.writeHead(503).end('upstream restarting');
        if (hits === 3) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'Success', message: '', compile_result: null, run_result: { status: 'Finished', execution_time: 0.1, return_code: 0, stdout: 'ok\n', stderr: '' }, files: {} }));
        res.writeHead(500).end('internal');
      });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/run_code`;
      const reasons: string[] = [];
      const client = new SandboxFusionClient({ url, retryInitialDelaySeconds: 0.01, onRetry: (r) => reasons.push(r.reason) });
      const [ok, response] = await client.run('print("ok")', {}, 5);
      expect([ok, (response as RunCodeResponse).run_result?.stdout]).toEqual([true, 'ok\n']);
      expect(reasons).toHaveLength(2);
      expect(reasons[1]).toBe('HTTP 503');
      expect(await client.run('print(1)', {}, 5)).toEqual([false, { error: 'HTTP 500: internal' }]);
    } finally {
      fake.closeAllConnections();
      await new Promise((resolve) => fake.close(resolve));
    }
  });
});
