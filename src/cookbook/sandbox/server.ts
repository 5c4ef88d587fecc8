// The local sandbox behind SandboxFusion's HTTP API (POST /run_code), so anything written for a
// SandboxFusion deployment — the reference's client, this project's SandboxFusionClient — can use
// it by pointing SANDBOX_URL at it. Binds 127.0.0.1 unless told otherwise: it runs code for anyone
// who can reach it. A request out of range is answered 422 naming its field; runs past the
// sandbox's concurrency wait in its queue (the depth each waited at is the X-Sandbox-Queue-Depth
// header of its answer, GET /stats has the queue now), and past the queue's depth 503 with
// Retry-After. Run it on its own:
//   node --import tsx src/cookbook/sandbox/server.ts [--port 8080] [--host 127.0.0.1]
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { LocalSandbox } from './local.js';
import { SandboxBusyError, SandboxRequestError, type RunCodeRequest } from './types.js';

const MAX_BODY_BYTES = 64 * 1024 * 1024;

export interface SandboxServer {
  /** The run_code endpoint, e.g. http://127.0.0.1:8080/run_code. */
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLarge(`request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The body as a request; its fields are checked by the sandbox (checkRunRequest), which names the one out of range. */
function asRequest(body: unknown): RunCodeRequest {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new Error('body must be a JSON object with a string "code"');
  const b = body as RunCodeRequest;
  return { ...b, language: b.language ?? 'python' };
}

export async function startSandboxServer(opts: { port?: number; host?: string; sandbox?: LocalSandbox } = {}): Promise<SandboxServer> {
  const sandbox = opts.sandbox ?? new LocalSandbox();
  await sandbox.available();
  const server = createServer((req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/stats') return reply(200, sandbox.queueStats());
    if (req.method !== 'POST' || path !== '/run_code') return reply(404, { detail: 'Not Found' });
    readBody(req)
      .then(async (text) => {
        let request: RunCodeRequest;
        try {
          request = asRequest(JSON.parse(text));
        } catch (e) {
          return reply(422, { detail: (e as Error).message });
        }
        let depth = 0;
        try {
          const response = await sandbox.runCode(request, (d) => (depth = d));
          res.setHeader('x-sandbox-queue-depth', String(depth));
          return reply(200, response);
        } catch (e) {
          if (e instanceof SandboxRequestError) return reply(422, { detail: e.message });
          if (e instanceof SandboxBusyError) {
            res.setHeader('retry-after', '1');
            return reply(503, { detail: e.message });
          }
          throw e;
        }
      })
      .catch((e: Error) => reply(e instanceof BodyTooLarge ? 413 : 500, { detail: e.message }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve);
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address}:${port}/run_code`,
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  startSandboxServer({ port: Number(arg('--port') ?? 8080), host: arg('--host') }).then(
    (s) => console.log(`sandbox listening: SANDBOX_URL=${s.url}`),
    (e: Error) => {
      console.error(e.message);
      process.exit(1);
    },
  );
}
