// The production TrainingBackend: the Tinker HTTP protocol (shared/reference/tinker-protocol.md)
// against the hosted service, any Tinker-compatible server, or the local engine.
import { resolveOptions, type ServerSettings, type TinkerBackendOptions } from './config.js';
import { ClientCore } from './core.js';
import { errorFromResponse, errorFromTransport, joinUrl, kindForStatus, parseJsonBody, TransportFailure } from './http.js';
import { HealthResponse } from './schemas.js';
import {
  CheckpointsListResponse,
  CreateModelResponse,
  CreateSamplingSessionAnswer,
  CreateSamplingSessionResponse,
  GetSamplerResponse,
  ServerCapabilities as CapabilitiesSchema,
  TrainingRun,
  TrainingRunsResponse,
  UnloadModelResponse,
  WeightsInfoResponse,
} from './schemas.js';
import { TinkerSamplingSession } from './sampling-session.js';
import { TinkerTrainingSession } from './training-session.js';
import { StatedSeqIdGuarantees } from './seq-guarantees.js';
import {
  BackendError,
  type Checkpoint,
  type CheckpointTransfer,
  type CreateModelOpts,
  type SamplingSession,
  type ServerCapabilities,
  type TrainingBackend,
  type TrainingSession,
  type WeightsInfo,
} from './types.js';

const enc = encodeURIComponent;

/** Path segments: ids may contain ':' (kept raw, as the SDK sends them) but never need escaping of '/'. */
function seg(s: string): string {
  return enc(s).replace(/%3A/gi, ':');
}

function checkpointFrom(c: ReturnType<typeof CheckpointsListResponse.parse>['checkpoints'][number]): Checkpoint {
  return {
    checkpoint_id: c.checkpoint_id,
    checkpoint_type: c.checkpoint_type,
    tinker_path: c.tinker_path,
    ...(c.time != null ? { time: c.time } : {}),
    ...(c.size_bytes !== undefined ? { size_bytes: c.size_bytes } : {}),
    ...(c.public != null ? { public: c.public } : {}),
    ...(c.expires_at !== undefined ? { expires_at: c.expires_at } : {}),
  };
}

export class TinkerBackend implements TrainingBackend, CheckpointTransfer {
  private readonly core: ClientCore;

  constructor(options: TinkerBackendOptions = {}) {
    this.core = new ClientCore(resolveOptions(options));
  }

  get baseUrl(): string {
    return this.core.opts.baseUrl;
  }

  /** client/config negotiation (runs lazily before the first call; call it to fail fast). */
  ready(): Promise<ServerSettings> {
    return this.core.settings();
  }

  /** The server session id, creating the session (and its heartbeat) if needed. */
  sessionId(): Promise<string> {
    return this.core.session();
  }

  get heartbeatActive(): boolean {
    return this.core.heartbeatActive;
  }

  async healthz(): Promise<{ status: string }> {
    return this.core.callJson({ method: 'GET', path: '/api/v1/healthz', requestType: 'healthz' }, HealthResponse);
  }

  async capabilities(): Promise<ServerCapabilities> {
    const r = await this.core.callJson(
      { method: 'GET', path: '/api/v1/get_server_capabilities', requestType: 'get_server_capabilities' },
      CapabilitiesSchema,
    );
    return {
      // The SDK's field is `model_name`; hatchery-core names model families under `model_id`, by prefix.
      supported_models: r.supported_models.flatMap((m) => {
        const name = m.model_name || m.model_id;
        if (!name) return [];
        return [{ model_name: name, ...(m.max_context_length != null ? { max_context_length: m.max_context_length } : {}), ...(m.model_name ? {} : { prefix: true }) }];
      }),
    };
  }

  /** What the server's capabilities say about seq_id ordering and dedupe (seq-guarantees.ts); undefined: nothing. */
  async statedSeqIdGuarantees(): Promise<{ ordered: boolean; deduplicated: boolean } | undefined> {
    const r = await this.core.callJson(
      { method: 'GET', path: '/api/v1/get_server_capabilities', requestType: 'get_server_capabilities' },
      StatedSeqIdGuarantees,
    );
    return r.seq_id_guarantees ?? undefined;
  }

  /** create_model (the model's seq 0); its first training request uses seq id 1. */
  async createTrainingSession(opts: CreateModelOpts): Promise<TinkerTrainingSession> {
    const { lora } = opts;
    const train = { train_unembed: lora.train_unembed ?? true, train_mlp: lora.train_mlp ?? true, train_attn: lora.train_attn ?? true };
    if (!train.train_attn && !train.train_mlp && !train.train_unembed) {
      throw new BackendError('create_model: at least one of train_attn/train_mlp/train_unembed must be true', undefined, 'create_model', lora, 'bad_request');
    }
    const requestId = await this.core.withSession((sessionId) => {
      const body: Record<string, unknown> = {
        session_id: sessionId,
        model_seq_id: this.core.nextModelSeqId(),
        base_model: opts.baseModel,
        lora_config: { rank: lora.rank, ...(lora.seed !== undefined ? { seed: lora.seed } : {}), ...train },
        type: 'create_model',
      };
      // SDK 0.38 names the optimizer always; its default, AdamW, goes unsaid: servers of the 0.25
      // dialect (TuFT) refuse the field, and every server takes its absence for AdamW.
      if (opts.optimizer && opts.optimizer.type !== 'adamw') body.optimizer_config = opts.optimizer;
      if (opts.userMetadata) body.user_metadata = opts.userMetadata;
      return this.core.submit({ method: 'POST', path: '/api/v1/create_model', body, requestType: 'create_model' });
    });
    const r = await this.core.poll(requestId, 'CreateModel', { json: CreateModelResponse });
    return new TinkerTrainingSession(this.core, r.model_id);
  }

  openTrainingSession(modelId: string): TinkerTrainingSession {
    return new TinkerTrainingSession(this.core, modelId);
  }

  /** weights_info → create_model (same base model, rank, train_* flags) → load_weights at seq 1. */
  async createTrainingSessionFromState(
    path: string,
    opts: { withOptimizer: boolean; userMetadata?: Record<string, string> },
  ): Promise<{ session: TrainingSession; nextSeqId: number }> {
    const info = await this.weightsInfo(path);
    if (info.lora_rank == null) {
      throw new BackendError(`weights_info for ${path} has no lora_rank; cannot recreate a LoRA model`, undefined, 'weights_info', info, 'bad_request');
    }
    const session = await this.createTrainingSession({
      baseModel: info.base_model,
      lora: {
        rank: info.lora_rank,
        train_unembed: info.train_unembed ?? true,
        train_mlp: info.train_mlp ?? true,
        train_attn: info.train_attn ?? true,
      },
      userMetadata: opts.userMetadata,
    });
    const load = await session.loadState(path, { seqId: 1, withOptimizer: opts.withOptimizer });
    await load.result();
    return { session, nextSeqId: 1 + load.seqIds };
  }

  async weightsInfo(path: string): Promise<WeightsInfo> {
    const r = await this.core.callJson(
      { method: 'POST', path: '/api/v1/weights_info', body: { tinker_path: path }, requestType: 'weights_info' },
      WeightsInfoResponse,
    );
    return {
      base_model: r.base_model,
      is_lora: r.is_lora,
      lora_rank: r.lora_rank ?? null,
      train_unembed: r.train_unembed ?? null,
      train_mlp: r.train_mlp ?? null,
      train_attn: r.train_attn ?? null,
    };
  }

  async createSamplingSession(source: { modelPath: string } | { baseModel: string }): Promise<SamplingSession> {
    const body: Record<string, unknown> = { type: 'create_sampling_session' };
    if ('modelPath' in source) {
      if (!source.modelPath.startsWith('tinker://')) {
        throw new BackendError(`sampler path must start with tinker://: ${source.modelPath}`, undefined, 'create_sampling_session', source, 'bad_request');
      }
      body.model_path = source.modelPath;
    } else {
      body.base_model = source.baseModel;
    }
    const answer = await this.core.withSession((sessionId) =>
      this.core.callJson(
        {
          method: 'POST',
          path: '/api/v1/create_sampling_session',
          body: { session_id: sessionId, sampling_session_seq_id: this.core.nextSamplingSeqId(), ...body },
          requestType: 'create_sampling_session',
        },
        CreateSamplingSessionAnswer,
      ),
    );
    // The protocol answers at once; hatchery-core answers with a future whose result is that answer.
    const r = 'sampling_session_id' in answer && typeof answer.sampling_session_id === 'string'
      ? { sampling_session_id: answer.sampling_session_id }
      : await this.core.poll(String(answer.request_id), 'CreateSamplingSession', { json: CreateSamplingSessionResponse });
    return new TinkerSamplingSession(this.core, r.sampling_session_id);
  }

  /** A sampler for an existing sampling session id (e.g. from an ephemeral save). */
  openSamplingSession(samplingSessionId: string): TinkerSamplingSession {
    return new TinkerSamplingSession(this.core, samplingSessionId);
  }

  async getSampler(samplerId: string): Promise<{ sampler_id: string; base_model: string; model_path?: string | null }> {
    return this.core.callJson({ method: 'GET', path: `/api/v1/samplers/${seg(samplerId)}`, requestType: 'get_sampler' }, GetSamplerResponse);
  }

  async listCheckpoints(trainingRunId: string): Promise<Checkpoint[]> {
    const r = await this.core.callJson(
      { method: 'GET', path: `/api/v1/training_runs/${seg(trainingRunId)}/checkpoints`, requestType: 'list_checkpoints' },
      CheckpointsListResponse,
    );
    return r.checkpoints.map(checkpointFrom);
  }

  /** All checkpoints of the account, newest first (RestClient.list_user_checkpoints). */
  async listUserCheckpoints(page: { limit?: number; offset?: number } = {}): Promise<Checkpoint[]> {
    const q = `limit=${page.limit ?? 100}&offset=${page.offset ?? 0}`;
    const r = await this.core.callJson({ method: 'GET', path: `/api/v1/checkpoints?${q}`, requestType: 'list_user_checkpoints' }, CheckpointsListResponse);
    return r.checkpoints.map(checkpointFrom);
  }

  /** `checkpointId` is `<kind>/<name>`; its '/' stays a path separator (§3.4). */
  async deleteCheckpoint(trainingRunId: string, checkpointId: string): Promise<void> {
    const [kind, ...rest] = checkpointId.split('/');
    if (!kind || rest.length !== 1 || !rest[0]) {
      throw new BackendError(`checkpoint id must be <kind>/<name>: ${checkpointId}`, undefined, 'delete_checkpoint', checkpointId, 'bad_request');
    }
    await this.core.settings();
    await this.core.http.call({
      method: 'DELETE',
      path: `/api/v1/training_runs/${seg(trainingRunId)}/checkpoints/${seg(kind)}/${seg(rest[0])}`,
      requestType: 'delete_checkpoint',
    });
  }

  /** Delete by `tinker://<run>/<kind>/<name>` path (RestClient.delete_checkpoint_from_tinker_path). */
  async deleteCheckpointByPath(tinkerPath: string): Promise<void> {
    const p = parseTinkerPath(tinkerPath);
    await this.deleteCheckpoint(p.trainingRunId, `${p.kind}/${p.name}`);
  }

  /**
   * A checkpoint's archive (§7 of the protocol): the archive route's signed URL (200 `{url}` or a
   * redirect; 503 while it is being built), then the tar from that URL, fetched without the key.
   */
  async checkpointArchive(tinkerPath: string, opts: { tries?: number; pauseMs?: number } = {}): Promise<Buffer> {
    const p = parseTinkerPath(tinkerPath);
    const route = `/api/v1/training_runs/${seg(p.trainingRunId)}/checkpoints/${p.kind}/${seg(p.name)}/archive`;
    await this.core.settings();
    const tries = opts.tries ?? 6;
    for (let attempt = 1; ; attempt++) {
      // One exchange at a time: a redirect is an answer here, and 503 means "building, ask again".
      let res;
      try {
        res = await this.core.http.send({ method: 'GET', path: route, requestType: 'checkpoint_archive' });
      } catch (err) {
        if (err instanceof TransportFailure) throw errorFromTransport(err, 'checkpoint_archive');
        throw err;
      }
      if (res.status === 503 && attempt < tries) {
        await new Promise((r) => setTimeout(r, opts.pauseMs ?? 5_000));
        continue;
      }
      const redirect = res.status >= 300 && res.status < 400;
      if (!redirect && (res.status < 200 || res.status >= 300)) throw errorFromResponse(res, 'checkpoint_archive');
      const location = redirect ? res.headers.get('location') : (parseJsonBody(res) as { url?: unknown } | undefined)?.url;
      if (typeof location !== 'string' || !location) {
        throw new BackendError(`the archive route of ${tinkerPath} answered HTTP ${res.status} without a URL`, res.status, 'checkpoint_archive', undefined, 'server');
      }
      const url = new URL(location, joinUrl(this.baseUrl, route)).toString();
      let download: Response;
      try {
        download = await fetch(url, { signal: AbortSignal.timeout(30 * 60_000) });
      } catch (err) {
        throw new BackendError(`downloading the archive of ${tinkerPath} failed: ${(err as Error).message}`, undefined, 'checkpoint_archive', undefined, 'transport');
      }
      if (!download.ok) {
        throw new BackendError(`downloading the archive of ${tinkerPath} failed: HTTP ${download.status}`, download.status, 'checkpoint_archive', undefined, kindForStatus(download.status));
      }
      return Buffer.from(await download.arrayBuffer());
    }
  }

  /**
   * Stores a checkpoint archive (as `checkpointArchive` returns it) under the same tinker path on
   * this server: the local engine's `import_checkpoint` extension, which answers whether it was
   * new (importing the same bytes again is a no-op; other bytes under the path are a conflict).
   */
  async importCheckpoint(tinkerPath: string, tar: Buffer, opts: { ttlSeconds?: number } = {}): Promise<{ imported: boolean }> {
    parseTinkerPath(tinkerPath);
    await this.core.settings();
    const ttl = opts.ttlSeconds === undefined ? '' : `&ttl_seconds=${opts.ttlSeconds}`;
    const res = await this.core.http.call({
      method: 'POST',
      path: `/api/v1/import_checkpoint?tinker_path=${enc(tinkerPath)}${ttl}`,
      body: new Uint8Array(tar.buffer, tar.byteOffset, tar.byteLength),
      contentType: 'application/x-tar',
      requestType: 'import_checkpoint',
      timeoutMs: 30 * 60_000,
    });
    const body = JSON.parse(res.body.toString('utf8') || '{}') as { imported?: unknown };
    return { imported: body.imported === true };
  }

  async getTrainingRun(trainingRunId: string): Promise<TrainingRun> {
    return this.core.callJson(
      { method: 'GET', path: `/api/v1/training_runs/${seg(trainingRunId)}?access_scope=owned`, requestType: 'get_training_run' },
      TrainingRun,
    );
  }

  async listTrainingRuns(page: { limit?: number; offset?: number } = {}): Promise<TrainingRun[]> {
    const q = `limit=${page.limit ?? 20}&offset=${page.offset ?? 0}&access_scope=owned`;
    const r = await this.core.callJson({ method: 'GET', path: `/api/v1/training_runs?${q}`, requestType: 'list_training_runs' }, TrainingRunsResponse);
    return r.training_runs;
  }

  async unloadModel(modelId: string): Promise<void> {
    await this.core.settings();
    const requestId = await this.core.submit({
      method: 'POST',
      path: '/api/v1/unload_model',
      body: { model_id: modelId, type: 'unload_model' },
      requestType: 'unload_model',
    });
    await this.core.poll(requestId, 'UnloadModel', { json: UnloadModelResponse });
  }

  /** Stops the heartbeat and aborts in-flight requests; idempotent. */
  async close(): Promise<void> {
    this.core.close();
  }
}

export interface TinkerPath {
  trainingRunId: string;
  kind: 'weights' | 'sampler_weights';
  name: string;
}

/** `tinker://<training_run_id>/<kind>/<name>` exactly (§10). */
export function parseTinkerPath(path: string): TinkerPath {
  const m = /^tinker:\/\/([^/]+)\/(weights|sampler_weights)\/([^/]+)$/.exec(path);
  if (!m) throw new BackendError(`not a tinker checkpoint path: ${path}`, undefined, 'parse_tinker_path', path, 'bad_request');
  return { trainingRunId: m[1], kind: m[2] as TinkerPath['kind'], name: m[3] };
}

/** The TrainingBackend over HTTP. Synchronous: nothing is contacted until the first call. */
export function createTinkerBackend(options: TinkerBackendOptions = {}): TinkerBackend {
  return new TinkerBackend(options);
}
