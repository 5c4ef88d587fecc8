// The SandboxFusion client against a real run_code server: the local sandbox behind the same HTTP
// API. Requests carry the reference client's payload; answers map to (success, response) as the
// reference's do, with HTTP errors, sandbox errors and unreachable servers as `{error}`, never throws.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSandbox } from '../../src/cookbook/sandbox/local.js';
import { startSandboxServer, type SandboxServer } from '../../src/cookbook/sandbox/server.js';
import { DEFAULT_SANDBOX_URL, SandboxFusionClient } from '../../src/cookbook/sandbox/sandboxfusion.js';
import type { RunCodeRequest, RunCodeResponse } from '../../src/cookbook/sandbox/types.js';

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

  it("the server's SandboxError, an HTTP error and an unreachable server come back as {error}", async () => {
    const [ok1, r1] = await new SandboxFusionClient({ url: server.url }).run('print(1)', {}, 5, 'cobol');
    expect(ok1).toBe(false);
    expect(r1).toMatchObject({ status: 'SandboxError', error: 'language "cobol" is not supported by the local sandbox (python, bash)' });

    const [ok2, r2] = await new SandboxFusionClient({ url: server.url.replace('/run_code', '/nope') }).run('print(1)', {}, 5);
    expect(ok2).toBe(false);
    expect(r2).toEqual({ error: 'HTTP 404: {"detail":"Not Found"}' });

    await server.close();
    const [ok3, r3] = await new SandboxFusionClient({ url: server.url }).run('print(1)', {}, 5);
    expect(ok3).toBe(false);
    expect(typeof (r3 as { error: string }).error).toBe('string');
    server = await startSandboxServer({ sandbox });
  });
});
