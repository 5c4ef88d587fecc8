// A W&B run over its HTTP API, as the wandb client drives it: the GraphQL `upsertBucket` mutation
// creates the run with its config (and later its summary), and the run's `file_stream` endpoint
// takes history lines at explicit offsets plus the summary, then `complete` at the end. Requests
// authenticate as HTTP basic `api:<WANDB_API_KEY>`; WANDB_BASE_URL points elsewhere (a local
// server, or the test's fake). The cursor (`.cookbook/tracking/wandb-online.json`) is advanced
// only after the server accepted the lines; lines resent after a crash carry the same offsets, and
// the server writes a line offset once, so no row is counted twice. At the end the final
// checkpoint is logged as the run's "model" artifact (wandb-online-artifact.ts), once: the cursor
// records it committed, and a retry after a crash before that finds the digest already committed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../run-store-integrity.js';
import { modelArtifact } from './wandb-artifact.js';
import { logArtifactOnline, type WandbApi } from './wandb-online-artifact.js';
import { historyRow, wandbConfig, wandbRunId } from './wandb-format.js';
import type { TrackedRun, TrackingSink } from './sink.js';

const UPSERT_BUCKET = `mutation UpsertBucket($id: String, $name: String, $project: String, $entity: String, $displayName: String, $config: JSONString, $summaryMetrics: JSONString, $program: String) {
  upsertBucket(input: {id: $id, name: $name, modelName: $project, entityName: $entity, displayName: $displayName, config: $config, summaryMetrics: $summaryMetrics, jobProgram: $program}) {
    bucket { id name displayName project { id name entity { id name } } }
    inserted
  }
}`;

interface Cursor {
  entity: string;
  project: string;
  runId: string;
  /** History lines the server holds: the offset of the next one. */
  lines: number;
  lastStep: number;
  /** The server's id of the committed model artifact, once logged. */
  artifactId?: string;
  finished: boolean;
}

export interface WandbEnv {
  apiKey: string;
  baseUrl: string;
  entity?: string;
}

export class WandbHttpError extends Error {
  constructor(what: string, status: number, body: string) {
    super(`W&B ${what}: HTTP ${status} ${body.slice(0, 300)}`);
    this.name = 'WandbHttpError';
  }
}

export class OnlineWandbRun implements TrackingSink {
  readonly location: string;
  private readonly cursorFile: string;
  private readonly runId: string;

  constructor(
    private readonly run: TrackedRun,
    private readonly env: WandbEnv,
  ) {
    this.runId = wandbRunId(run.workflowId);
    this.cursorFile = join(run.logPath, '.cookbook', 'tracking', 'wandb-online.json');
    this.location = `${env.baseUrl.replace(/\/$/, '')} ${run.project}/${this.runId}`;
  }

  private cursor(): Cursor | undefined {
    return existsSync(this.cursorFile) ? (JSON.parse(readFileSync(this.cursorFile, 'utf8')) as Cursor) : undefined;
  }

  private save(c: Cursor): void {
    writeFileAtomic(this.cursorFile, JSON.stringify(c));
  }

  private async post(path: string, body: unknown, what: string): Promise<unknown> {
    const res = await fetch(new URL(path, this.env.baseUrl.endsWith('/') ? this.env.baseUrl : `${this.env.baseUrl}/`), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`api:${this.env.apiKey}`).toString('base64')}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (!res.ok) throw new WandbHttpError(what, res.status, text);
    return text ? JSON.parse(text) : {};
  }

  private async graphql<T>(query: string, variables: Record<string, unknown>, what: string): Promise<T> {
    const r = (await this.post('graphql', { query, variables }, what)) as { data?: T; errors?: Array<{ message: string }> };
    if (r.errors?.length) throw new Error(`W&B ${what}: ${r.errors.map((e) => e.message).join('; ')}`);
    if (!r.data) throw new Error(`W&B ${what}: answered without data`);
    return r.data;
  }

  /** Upload URLs are signed (storage, not the API): no API key, only the headers the server gave. */
  private async upload(url: string, headers: string[], body: string, what: string): Promise<void> {
    const extra = Object.fromEntries(headers.map((h) => [h.slice(0, h.indexOf(':')), h.slice(h.indexOf(':') + 1)]));
    const res = await fetch(url, { method: 'PUT', headers: extra, body, signal: AbortSignal.timeout(120_000) });
    if (!res.ok) throw new WandbHttpError(what, res.status, await res.text());
  }

  private api(): WandbApi {
    return { graphql: (q, v, w) => this.graphql(q, v, w), upload: (u, h, b, w) => this.upload(u, h, b, w) };
  }

  private async upsert(variables: Record<string, unknown>): Promise<{ entity: string }> {
    const r = await this.graphql<{ upsertBucket?: { bucket?: { project?: { entity?: { name?: string } } } } }>(
      UPSERT_BUCKET,
      { name: this.runId, project: this.run.project, entity: this.env.entity, ...variables },
      'upsertBucket',
    );
    const entity = r.upsertBucket?.bucket?.project?.entity?.name ?? this.env.entity;
    if (!entity) throw new Error('W&B upsertBucket answered without the run\'s entity; set WANDB_ENTITY');
    return { entity };
  }

  private fileStream(c: Cursor, body: unknown): Promise<unknown> {
    return this.post(`files/${encodeURIComponent(c.entity)}/${encodeURIComponent(c.project)}/${encodeURIComponent(c.runId)}/file_stream`, body, 'file_stream');
  }

  async start(): Promise<void> {
    if (this.cursor()) return;
    const { entity } = await this.upsert({ displayName: this.run.name, config: JSON.stringify(wandbConfig(this.run.config)), program: 'durable-cookbook' });
    this.save({ entity, project: this.run.project, runId: this.runId, lines: 0, lastStep: -1, finished: false });
  }

  async lastStep(): Promise<number> {
    return this.cursor()?.lastStep ?? -1;
  }

  async append(rows: Array<Record<string, unknown>>, summary: Record<string, unknown>): Promise<void> {
    const c = this.cursor();
    if (!c || rows.length === 0) return;
    await this.fileStream(c, {
      files: {
        'wandb-history.jsonl': { offset: c.lines, content: rows.map((r) => JSON.stringify(historyRow(r))) },
        'wandb-summary.json': { offset: 0, content: [JSON.stringify(summary)] },
      },
    });
    this.save({ ...c, lines: c.lines + rows.length, lastStep: Number(rows[rows.length - 1].step) });
  }

  async finished(): Promise<boolean> {
    return this.cursor()?.finished ?? false;
  }

  async finish(summary: Record<string, unknown>, final: Record<string, unknown>, checkpointsJsonl: string): Promise<void> {
    let c = this.cursor();
    if (!c || c.finished) return;
    // The final checkpoint is a run file and part of the summary (W&B shows it on the run page)…
    await this.upsert({ summaryMetrics: JSON.stringify(summary) });
    await this.fileStream(c, { files: { 'wandb-summary.json': { offset: 0, content: [JSON.stringify(summary)] }, 'final_checkpoint.json': { offset: 0, content: [JSON.stringify(final)] } } });
    // …and the run's output "model" artifact, as the offline stream records it.
    if (!c.artifactId) {
      const artifactId = await logArtifactOnline(this.api(), { entity: c.entity, project: c.project, runName: c.runId }, modelArtifact(this.runId, final, checkpointsJsonl));
      c = { ...c, artifactId };
      this.save(c);
    }
    await this.fileStream(c, { complete: true, exitcode: 0 });
    this.save({ ...c, finished: true });
  }
}
