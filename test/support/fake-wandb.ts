// A local stand-in for the W&B API, strict about what the real one requires: HTTP basic auth
// `api:<key>`, the upsertBucket GraphQL mutation (run name, project, JSON-string config), and
// file_stream posts to /files/<entity>/<project>/<run>/file_stream whose history lines land at
// their `offset` (a resent offset overwrites, as on W&B). It keeps what a run page would show.
// Artifacts follow W&B's model: createArtifact answers the artifact with that digest in its
// collection if there is one (PENDING until committed, then COMMITTED), files and the manifest go
// to upload URLs it hands out (PUT, no API key: they are signed storage URLs), commitArtifact
// checks that every file the manifest lists was uploaded with its md5.
import { createHash } from 'node:crypto';
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

export interface FakeWandbArtifact {
  id: string;
  type: string;
  collection: string;
  digest: string;
  aliases: string[];
  metadata?: Record<string, unknown>;
  description?: string;
  /** The run that logged it (its output). */
  runName: string;
  project: string;
  state: 'PENDING' | 'COMMITTED';
  /** Uploaded files by name (the manifest under wandb_manifest.json). */
  files: Record<string, string>;
  /** md5 (base64) the client declared for each file, by name. */
  declared: Record<string, string>;
  commits: number;
}

export interface FakeWandb {
  baseUrl: string;
  runs: Map<string, FakeWandbRun>;
  artifacts: Map<string, FakeWandbArtifact>;
  /** GraphQL operations and uploads in the order they arrived (`createArtifact`, `PUT <file>`, …). */
  calls: string[];
  /** Fail the next n requests whose call name (as in `calls`) matches, with HTTP 500. */
  failNextCall(match: RegExp, n?: number): void;
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

const ARTIFACT_OPS = new Set(['CreateArtifact', 'CreateArtifactManifest', 'CreateArtifactFiles', 'CommitArtifact']);

function safeJson(body: string): { query?: string } | undefined {
  try {
    return JSON.parse(body) as { query?: string };
  } catch {
    return undefined;
  }
}

export async function startFakeWandb(apiKey: string, entity = 'test-entity'): Promise<FakeWandb> {
  const runs = new Map<string, FakeWandbRun>();
  const artifacts = new Map<string, FakeWandbArtifact>();
  const calls: string[] = [];
  const rejected: string[] = [];
  let failing = 0;
  let failCall: { match: RegExp; n: number } | undefined;
  const uploads = new Map<string, { artifactId: string; name: string }>();
  let nextId = 0;
  let baseUrl = '';
  const uploadUrl = (artifactId: string, name: string) => {
    const key = `u${++nextId}`;
    uploads.set(key, { artifactId, name });
    return `${baseUrl}/storage/${key}`;
  };
  const md5 = (s: string) => createHash('md5').update(s).digest('base64');
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
    const op = req.method === 'PUT' ? `PUT ${uploads.get((req.url ?? '').replace('/storage/', ''))?.name ?? req.url}` : (/^\s*mutation\s+(\w+)/.exec(safeJson(body)?.query ?? '')?.[1] ?? `${req.method} ${req.url}`);
    if (failCall && failCall.n > 0 && failCall.match.test(op)) {
      failCall.n--;
      return reply(500, { error: `injected failure of ${op}` });
    }
    calls.push(op);
    const put = /^\/storage\/(\w+)$/.exec(req.url ?? '');
    if (req.method === 'PUT' && put) {
      // A signed storage URL: the API key must not be sent there.
      if (req.headers.authorization) return refuse('API key sent to a storage URL');
      const target = uploads.get(put[1]);
      const artifact = target && artifacts.get(target.artifactId);
      if (!target || !artifact) return refuse('unknown upload URL');
      if (artifact.state === 'COMMITTED') return refuse(`upload to committed artifact ${artifact.id}`);
      if (req.headers['content-md5'] !== undefined && req.headers['content-md5'] !== md5(body)) return refuse(`${target.name}: body does not match Content-MD5`);
      artifact.files[target.name] = body;
      return reply(200, {});
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
    if (req.method === 'POST' && req.url === '/graphql' && ARTIFACT_OPS.has(op)) {
      const v = json.variables ?? {};
      if (op === 'CreateArtifact') {
        if (!/digestAlgorithm: MANIFEST_MD5/.test(json.query)) return refuse('createArtifact without digestAlgorithm MANIFEST_MD5');
        for (const k of ['artifactTypeName', 'entityName', 'projectName', 'digest']) if (typeof v[k] !== 'string' || !v[k]) return refuse(`createArtifact without ${k}`);
        if (v.entityName !== entity) return refuse(`createArtifact for entity ${v.entityName}`);
        const collection = v.artifactCollectionNames?.[0];
        if (typeof collection !== 'string') return refuse('createArtifact without artifactCollectionNames');
        if (v.runName !== undefined && v.runName !== null && !runs.has(v.runName)) return refuse(`createArtifact for an unknown run ${v.runName}`);
        const same = [...artifacts.values()].find((a) => a.collection === collection && a.digest === v.digest);
        const latest = [...artifacts.values()].filter((a) => a.collection === collection && a.state === 'COMMITTED').at(-1);
        const artifact: FakeWandbArtifact = same ?? {
          id: `art-${++nextId}`, type: v.artifactTypeName, collection, digest: v.digest, runName: v.runName, project: v.projectName,
          aliases: [], state: 'PENDING', files: {}, declared: {}, commits: 0,
          metadata: v.metadata ? JSON.parse(v.metadata) : undefined, description: v.description ?? undefined,
        };
        for (const a of (v.aliases ?? []) as Array<{ artifactCollectionName: string; alias: string }>) {
          if (a.artifactCollectionName !== collection) return refuse(`alias ${a.alias} names collection ${a.artifactCollectionName}`);
          if (!artifact.aliases.includes(a.alias)) artifact.aliases.push(a.alias);
        }
        artifacts.set(artifact.id, artifact);
        return reply(200, { data: { createArtifact: { artifact: { id: artifact.id, state: artifact.state, artifactSequence: { id: `seq-${collection}`, latestArtifact: latest ? { id: latest.id, versionIndex: 0 } : null } } } } });
      }
      const artifactId = op === 'CreateArtifactFiles' ? v.artifactFiles?.[0]?.artifactID : v.artifactID;
      const artifact = artifacts.get(artifactId);
      if (!artifact) return refuse(`${op} for an unknown artifact ${artifactId}`);
      if (op === 'CreateArtifactManifest') {
        if (v.name !== 'wandb_manifest.json') return refuse(`manifest named ${v.name}`);
        if (typeof v.digest !== 'string') return refuse('createArtifactManifest without digest');
        if (v.digest) artifact.declared['wandb_manifest.json'] = v.digest;
        const file: Record<string, unknown> = { id: `f-${artifact.id}-manifest`, name: 'wandb_manifest.json', displayName: 'wandb_manifest.json' };
        if (v.includeUpload) Object.assign(file, { uploadUrl: uploadUrl(artifact.id, 'wandb_manifest.json'), uploadHeaders: [`Content-MD5:${v.digest}`] });
        return reply(200, { data: { createArtifactManifest: { artifactManifest: { id: `m-${artifact.id}`, file } } } });
      }
      if (op === 'CreateArtifactFiles') {
        if (v.storageLayout !== 'V2') return refuse(`storageLayout ${v.storageLayout}`);
        const specs = v.artifactFiles as Array<{ artifactID: string; artifactManifestID: string; name: string; md5: string }>;
        const bad = specs.find((f) => f.artifactID !== artifact.id || f.artifactManifestID !== `m-${artifact.id}` || !f.name || !f.md5);
        if (bad) return refuse(`createArtifactFiles: file spec ${JSON.stringify(bad)} does not name artifact ${artifact.id}, its manifest, a name and an md5`);
        const edges = specs.map((f) => {
          artifact.declared[f.name] = f.md5;
          // Already stored with this md5: no URL, as W&B's dedupe answers.
          const have = artifact.files[f.name] !== undefined && md5(artifact.files[f.name]) === f.md5;
          return { node: { id: `f-${artifact.id}-${f.name}`, name: f.name, displayName: f.name, uploadUrl: have ? null : uploadUrl(artifact.id, f.name), uploadHeaders: have ? [] : [`Content-MD5:${f.md5}`], artifact: { id: artifact.id } } };
        });
        return reply(200, { data: { createArtifactFiles: { files: { edges } } } });
      }
      // CommitArtifact: the manifest and every file it lists as uploaded, with the declared md5s.
      const manifest = artifact.files['wandb_manifest.json'];
      if (manifest === undefined) return refuse(`commit of ${artifact.id} before its manifest was uploaded`);
      if (md5(manifest) !== artifact.declared['wandb_manifest.json']) return refuse('manifest upload does not match its declared digest');
      for (const [path, entry] of Object.entries(JSON.parse(manifest).contents as Record<string, { digest: string; ref?: string }>)) {
        if (entry.ref) continue;
        if (artifact.files[path] === undefined || md5(artifact.files[path]) !== entry.digest) return refuse(`commit of ${artifact.id}: ${path} not uploaded with digest ${entry.digest}`);
      }
      artifact.state = 'COMMITTED';
      artifact.commits += 1;
      return reply(200, { data: { commitArtifact: { artifact: { id: artifact.id, digest: artifact.digest } } } });
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
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    runs,
    artifacts,
    calls,
    failNextCall(match, n = 1) {
      failCall = { match, n };
    },
    rejected,
    failNext(n) {
      failing = n;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}
