// A local stand-in for the W&B API, strict about what the real one requires: HTTP basic auth
// `api:<key>`, the upsertBucket GraphQL mutation (run name, project, JSON-string config), and
// file_stream posts to /files/<entity>/<project>/<run>/file_stream whose history lines land at
// their `offset` (a resent offset overwrites, as on W&B). It keeps what a run page would show.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeWandbRun {
  project: string;
  config?: Record<string, { value: unknown }>;
  displayName?: string | null;
  history: string[];
  summary?: Record<string, unknown>;
  files: Record<string, string[]>;
  complete: boolean;
}

export interface FakeWandb {
  baseUrl: string;
  runs: Map<string, FakeWandbRun>;
  /** Requests refused for a missing or wrong key, or a malformed body. */
  rejected: string[];
  /** Answer the next n requests with HTTP 503 (W&B down). */
  failNext(n: number): void;
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let s = '';
    req.on('data', (c) => (s += c));
    req.on('end', () => resolve(s));
    req.on('error', reject);
  });

export async function startFakeWandb(apiKey: string, entity = 'test-entity'): Promise<FakeWandb> {
  const runs = new Map<string, FakeWandbRun>();
  const rejected: string[] = [];
  let failing = 0;
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req);
    const reply = (status: number, data: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(data));
    };
    const refuse = (why: string) => {
      rejected.push(`${req.method} ${req.url}: ${why}`);
      reply(400, { error: why });
    };
    if (failing > 0) {
      failing--;
      return reply(503, { error: 'unavailable' });
    }
    if (req.headers.authorization !== `Basic ${Buffer.from(`api:${apiKey}`).toString('base64')}`) {
      rejected.push(`${req.method} ${req.url}: bad auth`);
      return reply(401, { error: 'unauthorized' });
    }
    let json: any;
    try {
      json = JSON.parse(body);
    } catch {
      return refuse('body is not JSON');
    }
    if (req.method === 'POST' && req.url === '/graphql') {
      if (typeof json.query !== 'string' || !/mutation UpsertBucket[\s\S]*upsertBucket\(input:/.test(json.query)) return refuse('not an upsertBucket mutation');
      const v = json.variables ?? {};
      if (typeof v.name !== 'string' || typeof v.project !== 'string') return refuse('upsertBucket without name or project');
      const run: FakeWandbRun = runs.get(v.name) ?? { project: v.project, history: [], files: {}, complete: false };
      if (v.config !== undefined) {
        if (typeof v.config !== 'string') return refuse('config must be a JSON string');
        run.config = JSON.parse(v.config);
      }
      if (v.summaryMetrics !== undefined) run.summary = JSON.parse(v.summaryMetrics);
      if (v.displayName !== undefined) run.displayName = v.displayName;
      runs.set(v.name, run);
      return reply(200, { data: { upsertBucket: { bucket: { id: `id-${v.name}`, name: v.name, displayName: run.displayName ?? null, project: { id: 'p', name: v.project, entity: { id: 'e', name: entity } } }, inserted: true } } });
    }
    const m = /^\/files\/([^/]+)\/([^/]+)\/([^/]+)\/file_stream$/.exec(req.url ?? '');
    if (req.method === 'POST' && m) {
      const [, ent, project, name] = m.map(decodeURIComponent);
      const run = runs.get(name);
      if (ent !== entity || !run || run.project !== project) return refuse(`file_stream for an unknown run ${ent}/${project}/${name}`);
      for (const [file, chunk] of Object.entries((json.files ?? {}) as Record<string, { offset: number; content: string[] }>)) {
        if (!Number.isInteger(chunk.offset) || !Array.isArray(chunk.content)) return refuse(`${file}: offset and content required`);
        if (file === 'wandb-history.jsonl') {
          if (chunk.offset > run.history.length) return refuse(`history offset ${chunk.offset} leaves a gap after ${run.history.length} lines`);
          chunk.content.forEach((line, i) => (run.history[chunk.offset + i] = line));
        } else if (file === 'wandb-summary.json') run.summary = JSON.parse(chunk.content.at(-1)!);
        else run.files[file] = chunk.content;
      }
      if (json.complete) run.complete = true;
      return reply(200, {});
    }
    refuse('unknown route');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    runs,
    rejected,
    failNext(n) {
      failing = n;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}
