// A training model on the server (SDK TrainingClient), addressed by model id from any process.
// Sequence ids come from the caller (see SeqOpts in types.ts and docs/tinker-client.md): a call
// with seqId s and k chunks sends s, s+1, …, s+k−1, and a retry of the call sends them again with
// byte-identical payloads, so the server's (model id, seq id) dedupe makes it exactly-once.
import * as zlib from 'node:zlib';
import { chunkData } from './chunking.js';
import { checkSeqId, type ClientCore, submitted } from './core.js';
import { runCustomLoss } from './custom-loss.js';
import type { FutureRequestType, ResultDecoder } from './futures.js';
import type { HttpResponse } from './http.js';
import { combineForwardBackwardOutputs } from './merge.js';
import { decodeForwardBackwardOutput, encodeForwardBackwardRequest, PROTOBUF_CONTENT_TYPE } from './proto.js';
import { TinkerSamplingSession } from './sampling-session.js';
import {
  ForwardBackwardOutputJson,
  GetInfoResponse as GetInfoSchema,
  LoadWeightsResponse,
  OptimStepResponse as OptimStepSchema,
  SaveWeightsForSamplerResponse,
  SaveWeightsResponse,
} from './schemas.js';
import {
  type AdamParams,
  BackendError,
  type DimuonParams,
  type CustomLossFn,
  type CustomLossSubmitted,
  type Datum,
  type ForwardBackwardOutput,
  type ForwardOpts,
  type GetInfoResponse,
  type LossFn,
  type OptimParams,
  type OptimStepResponse,
  type SamplingSession,
  type SaveOpts,
  type SeqOpts,
  type Submitted,
  type TrainingSession,
} from './types.js';
import { forwardBackwardJsonBody, forwardBackwardOutputFromJson } from './wire-json.js';

export const ADAM_DEFAULTS = { beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0, grad_clip_norm: 0 } as const;
const DIMUON_DEFAULTS = { grad_clip_norm: 0, beta1: 0.9 } as const;

function isDimuon(params: AdamParams | DimuonParams): params is DimuonParams {
  return (params as DimuonParams).type === 'dimuon';
}

const FB_DECODER: ResultDecoder<ForwardBackwardOutput> = {
  json: (v) => {
    const parsed = ForwardBackwardOutputJson.safeParse(v);
    if (!parsed.success) {
      throw new BackendError(`forward_backward result has an unexpected shape: ${parsed.error.message}`, 200, 'ForwardBackward', v, 'server');
    }
    return forwardBackwardOutputFromJson(parsed.data);
  },
  proto: decodeForwardBackwardOutput,
};

type ZstdCompress = (buf: Uint8Array) => Buffer;
const zstdCompress = (zlib as unknown as { zstdCompressSync?: ZstdCompress }).zstdCompressSync;

/** `<session_id>:train:<n>` → session id (§10); undefined for ids of another shape. */
export function sessionOfModel(modelId: string): string | undefined {
  const i = modelId.lastIndexOf(':train:');
  return i > 0 ? modelId.slice(0, i) : undefined;
}

export class TinkerTrainingSession implements TrainingSession {
  constructor(
    private readonly core: ClientCore,
    readonly modelId: string,
  ) {}

  async getInfo(): Promise<GetInfoResponse> {
    const r = await this.core.callJson(
      { method: 'POST', path: '/api/v1/get_info', body: { model_id: this.modelId, type: 'get_info' }, requestType: 'get_info' },
      GetInfoSchema,
    );
    return {
      model_id: r.model_id,
      model_data: {
        ...(r.model_data.arch != null ? { arch: r.model_data.arch } : {}),
        ...(r.model_data.model_name != null ? { model_name: r.model_data.model_name } : {}),
        ...(r.model_data.tokenizer_id != null ? { tokenizer_id: r.model_data.tokenizer_id } : {}),
      },
      ...(r.is_lora != null ? { is_lora: r.is_lora } : {}),
      ...(r.lora_rank != null ? { lora_rank: r.lora_rank } : {}),
      ...(r.model_name != null ? { model_name: r.model_name } : {}),
      ...(r.optimizer_config != null ? { optimizer_config: r.optimizer_config } : {}),
    };
  }

  forward(data: Datum[], lossFn: LossFn, opts: ForwardOpts): Promise<Submitted<ForwardBackwardOutput>> {
    return this.runChunked(data, lossFn, opts, true);
  }

  forwardBackward(data: Datum[], lossFn: LossFn, opts: ForwardOpts): Promise<Submitted<ForwardBackwardOutput>> {
    return this.runChunked(data, lossFn, opts, false);
  }

  forwardBackwardCustom(data: Datum[], lossFn: CustomLossFn, opts: SeqOpts): Promise<CustomLossSubmitted> {
    return runCustomLoss(this, data, lossFn, opts);
  }

  /** Splits, submits every chunk, and resolves once all were accepted (not computed). */
  private async runChunked(data: Datum[], lossFn: LossFn, opts: ForwardOpts, forwardOnly: boolean): Promise<Submitted<ForwardBackwardOutput>> {
    const requestType: FutureRequestType = forwardOnly ? 'Forward' : 'ForwardBackward';
    checkSeqId(opts.seqId, requestType);
    const settings = await this.core.settings();
    const chunks = chunkData(data, settings.maxChunkLen, settings.maxChunkBytes);
    checkSeqId(opts.seqId + Math.max(0, chunks.length - 1), requestType);
    const submitChunk = (chunk: Datum[], i: number) => this.submitChunk(chunk, opts.seqId + i, lossFn, opts.lossFnConfig, forwardOnly);

    let requestIds: string[];
    if (settings.parallelChunks && chunks.length > 1) {
      // SDK ≥0.20 order: chunks 2..n concurrently, chunk 1 last, so the server can start as soon as
      // the first chunk lands with the rest already buffered (§5.3).
      const rest = await Promise.allSettled(chunks.slice(1).map((c, j) => submitChunk(c, j + 1)));
      const failed = rest.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      const first = await submitChunk(chunks[0], 0);
      requestIds = [first, ...rest.map((r) => (r as PromiseFulfilledResult<string>).value)];
    } else {
      requestIds = [];
      for (let i = 0; i < chunks.length; i++) requestIds.push(await submitChunk(chunks[i], i));
    }
    return submitted(chunks.length, () => this.forwardBackwardResult(requestIds, requestType), requestIds);
  }

  async forwardBackwardResult(requestIds: string[], requestType: FutureRequestType = 'ForwardBackward'): Promise<ForwardBackwardOutput> {
    const results = await Promise.all(requestIds.map((id) => this.core.poll(id, requestType, FB_DECODER)));
    return combineForwardBackwardOutputs(results);
  }

  async optimStepResult(requestId: string): Promise<OptimStepResponse> {
    const r = await this.core.poll(requestId, 'OptimStep', { json: OptimStepSchema });
    return { metrics: r.metrics ?? null };
  }

  private async submitChunk(
    data: Datum[],
    seqId: number,
    lossFn: LossFn,
    lossFnConfig: Record<string, number> | undefined,
    forwardOnly: boolean,
  ): Promise<string> {
    const requestType = forwardOnly ? 'forward' : 'forward_backward';
    const settings = this.core.currentSettings ?? (await this.core.settings());
    if (settings.encoding === 'protobuf') {
      let body: Uint8Array = encodeForwardBackwardRequest({ modelId: this.modelId, seqId, data, lossFn, lossFnConfig, forwardOnly });
      const headers: Record<string, string> = {};
      if (settings.compressFwdbwd && zstdCompress) {
        body = zstdCompress(body);
        headers['Content-Encoding'] = 'zstd';
      }
      // While this client has had no protobuf body accepted, an answer that names the body is not
      // retried as protobuf: it is resent once as JSON (why that cannot apply a step twice: see
      // refusesProtobufBody).
      const onTrial = this.core.protobufOnTrial;
      const protobufRequest = { method: 'POST', path: '/api/v1/forward_backward', body, contentType: PROTOBUF_CONTENT_TYPE, headers, requestType } as const;
      try {
        const requestId = await this.core.submit({ ...protobufRequest, ...(onTrial ? { giveUpOn: refusesProtobufBody } : {}) });
        this.core.protobufWorks();
        return requestId;
      } catch (err) {
        const refused = err instanceof BackendError && err.status !== undefined && (err.status === 415 || (onTrial && refusalStatus(err.status, err.detail)));
        if (!refused) throw err;
        // Another request of this client had its protobuf body accepted meanwhile: this failure is
        // an ordinary one, retried as protobuf as any other would have been.
        if (onTrial && !this.core.protobufOnTrial && err.status !== 415) return this.core.submit(protobufRequest);
        if (!this.core.protobufOnTrial) throw err;
        this.core.fallBackToJson(err.message);
        // The server lacks protobuf only if it takes the same request as JSON. Refused as JSON too
        // (or not expressible in JSON: stable_reinforce's provenance), the request itself was at
        // fault: protobuf stays, and the server's answer to it is the error.
        try {
          return await this.submitJson(seqId, data, lossFn, lossFnConfig, forwardOnly, requestType);
        } catch {
          this.core.backToProtobuf();
          throw err;
        }
      }
    }
    return this.submitJson(seqId, data, lossFn, lossFnConfig, forwardOnly, requestType);
  }

  private submitJson(seqId: number, data: Datum[], lossFn: LossFn, lossFnConfig: Record<string, number> | undefined, forwardOnly: boolean, requestType: 'forward' | 'forward_backward'): Promise<string> {
    return this.core.submit({
      method: 'POST',
      // JSON dialect: forward has its own endpoint (≤0.24 SDKs, §3.2).
      path: forwardOnly ? '/api/v1/forward' : '/api/v1/forward_backward',
      body: forwardBackwardJsonBody({ modelId: this.modelId, seqId, data, lossFn, lossFnConfig, forwardOnly }),
      requestType,
    });
  }

  async optimStep(params: OptimParams, opts: SeqOpts): Promise<Submitted<OptimStepResponse>> {
    checkSeqId(opts.seqId, 'OptimStep');
    await this.core.settings();
    const requestId = await this.core.submit({
      method: 'POST',
      path: '/api/v1/optim_step',
      body: {
        // SDK 0.38: AdamParams travel as `adam_params`, any other family's as `optimizer_params`.
        ...(isDimuon(params)
          ? { optimizer_params: { type: 'dimuon', ...DIMUON_DEFAULTS, ...stripUndefined(params) } }
          : { adam_params: { ...ADAM_DEFAULTS, ...stripUndefined(params) } }),
        model_id: this.modelId,
        seq_id: opts.seqId,
        type: 'optim_step',
      },
      requestType: 'optim_step',
    });
    return submitted(1, () => this.optimStepResult(requestId), [requestId]);
  }

  async saveState(name: string, opts: SaveOpts): Promise<Submitted<{ path: string }>> {
    checkSeqId(opts.seqId, 'SaveWeights');
    checkName(name, 'save_weights');
    await this.core.settings();
    const body: Record<string, unknown> = {
      model_id: this.modelId,
      path: name,
      seq_id: opts.seqId,
      overwrite: opts.overwrite ?? false,
      type: 'save_weights',
    };
    if (opts.ttlSeconds != null) body.ttl_seconds = opts.ttlSeconds;
    const requestId = await this.core.submit({ method: 'POST', path: '/api/v1/save_weights', body, requestType: 'save_weights' });
    return submitted(1, async () => {
      const r = await this.core.poll(requestId, 'SaveWeights', { json: SaveWeightsResponse });
      return { path: r.path };
    });
  }

  async saveWeightsForSampler(name: string, opts: SaveOpts): Promise<Submitted<{ path: string }>> {
    checkSeqId(opts.seqId, 'SaveWeightsForSampler');
    checkName(name, 'save_weights_for_sampler');
    await this.core.settings();
    const body: Record<string, unknown> = {
      model_id: this.modelId,
      path: name,
      seq_id: opts.seqId,
      type: 'save_weights_for_sampler',
    };
    if (opts.ttlSeconds != null) body.ttl_seconds = opts.ttlSeconds;
    const requestId = await this.core.submit({ method: 'POST', path: '/api/v1/save_weights_for_sampler', body, requestType: 'save_weights_for_sampler' });
    return submitted(1, async () => {
      const r = await this.core.poll(requestId, 'SaveWeightsForSampler', { json: SaveWeightsForSamplerResponse });
      if (!r.path) throw new BackendError('save_weights_for_sampler returned no path', 200, 'SaveWeightsForSampler', r, 'server');
      return { path: r.path };
    });
  }

  /**
   * The sampling-session counter is session-wide (§3.2) and lives in the process that created the
   * model; a model opened by id elsewhere must be given `samplingSessionSeqId` explicitly.
   */
  async saveWeightsAndGetSamplingSession(opts: SeqOpts & { samplingSessionSeqId?: number }): Promise<Submitted<SamplingSession>> {
    checkSeqId(opts.seqId, 'SaveWeightsForSampler');
    await this.core.settings();
    let samplingSeq = opts.samplingSessionSeqId;
    if (samplingSeq === undefined) {
      const mine = await this.core.existingSession();
      if (!mine || sessionOfModel(this.modelId) !== mine) {
        throw new BackendError(
          'saveWeightsAndGetSamplingSession: this model belongs to another client session; pass samplingSessionSeqId or use a named sampler path',
          undefined,
          'SaveWeightsForSampler',
          { modelId: this.modelId },
          'bad_request',
        );
      }
      samplingSeq = this.core.nextSamplingSeqId();
    }
    const requestId = await this.core.submit({
      method: 'POST',
      path: '/api/v1/save_weights_for_sampler',
      body: { model_id: this.modelId, sampling_session_seq_id: samplingSeq, seq_id: opts.seqId, type: 'save_weights_for_sampler' },
      requestType: 'save_weights_for_sampler',
    });
    return submitted(1, async () => {
      const r = await this.core.poll(requestId, 'SaveWeightsForSampler', { json: SaveWeightsForSamplerResponse });
      if (!r.sampling_session_id) {
        throw new BackendError('ephemeral save_weights_for_sampler returned no sampling_session_id', 200, 'SaveWeightsForSampler', r, 'server');
      }
      return new TinkerSamplingSession(this.core, r.sampling_session_id);
    });
  }

  async loadState(path: string, opts: SeqOpts & { withOptimizer: boolean }): Promise<Submitted<{ path: string }>> {
    checkSeqId(opts.seqId, 'LoadWeights');
    await this.core.settings();
    const requestId = await this.core.submit({
      method: 'POST',
      path: '/api/v1/load_weights',
      body: { model_id: this.modelId, seq_id: opts.seqId, path, optimizer: opts.withOptimizer, type: 'load_weights' },
      requestType: 'load_weights',
    });
    return submitted(1, async () => {
      const r = await this.core.poll(requestId, 'LoadWeights', { json: LoadWeightsResponse });
      return { path: r.path ?? path };
    });
  }
}

/**
 * A protobuf body refused in a way that names the body: 415 (no protobuf dialect), 400 with a reason
 * and 422 (the body failed validation: FastAPI servers that read JSON only), 500/501 (the server
 * broke reading it: hatchery-core answers protobuf with a 500). Gateways' 502–504, 429 and bodiless
 * 400s say nothing about the body and stay ordinary retries.
 *
 * Why resending that request as JSON under the same seq id cannot apply it twice: a 4xx is a
 * refusal, nothing was queued. A 500 to a server that does not speak protobuf means the same. A
 * 500 to one that does, after it queued the request, is the case a plain retry already meets
 * (every 5xx is retried with the same seq id): a server that deduplicates on (model id, seq id)
 * answers the resend with the original result, whatever the body's encoding (the engine's
 * fingerprint is of the parsed request); a server that does not deduplicate is exposed to that
 * 500 exactly as to any retried 5xx, no more. Only the first protobuf bodies of a client are on
 * trial (a forward or forward_backward; create_model before them is JSON), and the optim_step
 * that follows goes out only once this submit, fallback included, has returned.
 */
function refusesProtobufBody(res: HttpResponse): boolean {
  return refusalStatus(res.status, res.body.length > 0 ? 'body' : undefined);
}

function refusalStatus(status: number, detail: unknown): boolean {
  if (status === 400) return detail !== undefined && detail !== '';
  return status === 415 || status === 422 || status === 500 || status === 501;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Checkpoint names become the last segment of a tinker path, which may not contain '/' (§10). */
function checkName(name: string, requestType: string): void {
  if (!name || name.includes('/')) {
    throw new BackendError(`${requestType}: checkpoint name must be non-empty and contain no '/': ${JSON.stringify(name)}`, undefined, requestType, { name }, 'bad_request');
  }
}
