// The TrainingBackend contract: shaped like the Tinker SDK's ServiceClient / TrainingClient /
// SamplingClient (what the cookbook uses), with one deliberate difference — sequence ids are
// supplied by the caller. Workflows own the per-model seq counter (DESIGN §3.5), so a retried
// activity resends exactly the ids it sent the first time and the server deduplicates them.

export type TensorDtype = 'int64' | 'float32';

/** Tinker TensorData: flat data + optional shape (row-major). */
export interface TensorData {
  data: number[];
  dtype: TensorDtype;
  shape?: number[];
  /** Sparse CSR (2-D only): `data` holds the listed cells; see SDK 0.38 `TensorData`. */
  sparse_crow_indices?: number[];
  sparse_col_indices?: number[];
}

export interface EncodedTextChunk {
  type: 'encoded_text';
  tokens: number[];
}
export interface ImageChunk {
  type: 'image';
  data: string; // base64
  format: 'png' | 'jpeg';
  expected_tokens?: number;
}
export type ModelInputChunk = EncodedTextChunk | ImageChunk;

export interface ModelInput {
  chunks: ModelInputChunk[];
}

export interface Datum {
  model_input: ModelInput;
  /** e.g. { target_tokens: int64[N], weights: float32[N] } or RL keys (logprobs, advantages). */
  loss_fn_inputs: Record<string, TensorData>;
  /**
   * SDK 0.38 provenance (both or neither): runs tiling the input tokens / `target_tokens`, each
   * naming the sampled sequence its positions come from. Travel only on the protobuf path.
   */
  model_input_spans?: ProvenanceSpan[];
  loss_fn_input_spans?: ProvenanceSpan[];
}

/**
 * Positions [offset, offset + length) of a sampled sequence's request prompt ('prompt',
 * SDK PromptProvenanceSpan) or of its sampled tokens ('sampled', SDK SampledProvenanceSpan).
 */
export interface ProvenanceSpan {
  kind: 'prompt' | 'sampled';
  sequence_id: string;
  offset: number;
  length: number;
}

export type LossFn = 'cross_entropy' | 'importance_sampling' | 'ppo' | 'cispo' | 'dro' | 'gspo' | 'stable_reinforce';

export interface ForwardBackwardOutput {
  loss_fn_output_type: string;
  /** One entry per datum, in request order across chunks; at least `logprobs`. */
  loss_fn_outputs: Array<Record<string, TensorData>>;
  /** Keys are `name:reduction` (e.g. `loss:sum`). */
  metrics: Record<string, number>;
}

export interface AdamParams {
  learning_rate: number;
  beta1?: number; // 0.9
  beta2?: number; // 0.95
  eps?: number; // 1e-12 (Tinker default)
  weight_decay?: number; // 0
  grad_clip_norm?: number; // 0 = off
}

/** SDK 0.38's optimizer family, fixed at create_model. */
export type OptimizerConfig = { type: 'adamw' } | { type: 'dimuon'; version: 1 };

/** Per-step hyperparameters of a Dimuon model (optim_step's `optimizer_params`). */
export interface DimuonParams {
  type: 'dimuon';
  learning_rate: number;
  grad_clip_norm?: number; // 0 (≤ 0 disables)
  beta1?: number; // 0.9
}

/** AdamParams (sent as `adam_params`) or another family's params (sent as `optimizer_params`). */
export type OptimParams = AdamParams | DimuonParams;

export interface OptimStepResponse {
  metrics?: Record<string, number> | null;
}

export interface SamplingParams {
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  seed?: number;
  /** Stop strings or token ids. `[]` means no stop at all, EOS included (SDK 0.38 semantics);
   *  leave it out to stop at EOS only. */
  stop?: string[] | number[];
}

export interface SampledSequence {
  stop_reason: 'length' | 'stop';
  tokens: number[];
  logprobs?: number[] | null;
  /** Session-scoped id the server gave this sample at submission (servers of SDK 0.38+). */
  sequence_id?: string;
  /** Per sampled token: its top-k [token_id, logprob] pairs (or null); `topkSampleLogprobs`. */
  topk_logprobs?: Array<Array<[number, number]> | null> | null;
}

/** `promptAltTokensK` draws: both tensors [len(prompt) - 1, k]; row i are alternatives to prompt[i + 1]. */
export interface PromptAltTokens {
  tokens: TensorData;
  logprobs: TensorData;
}

export interface SampleResponse {
  sequences: SampledSequence[];
  /** One per prompt token; the first is null. */
  prompt_logprobs?: Array<number | null> | null;
  /** Per prompt token: list of [token_id, logprob] pairs (or null). */
  topk_prompt_logprobs?: Array<Array<[number, number]> | null> | null;
  /** Prompt tokens the server billed as prefix-cache hits (0 from servers without a prefix cache). */
  prompt_cache_hit_tokens?: number;
  /** float32, the request's `targetPromptLogprobs` shape and layout (sparse stays sparse); 0 at -1 cells. */
  target_prompt_logprobs?: TensorData | null;
  prompt_alt_tokens?: PromptAltTokens | null;
}

export interface LoraConfig {
  rank: number;
  seed?: number;
  train_unembed?: boolean;
  train_mlp?: boolean;
  train_attn?: boolean;
}

export interface ServerCapabilities {
  /**
   * Entries without a model name are dropped by the client. `prefix`: the entry names a family of
   * models by the start of their names, not one model (hatchery-core lists families under
   * `model_id`); `servedEntry` matches either.
   */
  supported_models: Array<{ model_name: string; max_context_length?: number; prefix?: boolean }>;
}

/** The capabilities entry that serves `model`: its exact name, else a family whose prefix it starts with. */
export function servedEntry(caps: ServerCapabilities, model: string): ServerCapabilities['supported_models'][number] | undefined {
  return caps.supported_models.find((m) => m.model_name === model) ?? caps.supported_models.find((m) => m.prefix && model.startsWith(m.model_name));
}

export interface GetInfoResponse {
  model_id: string;
  model_data: { arch?: string; model_name?: string; tokenizer_id?: string };
  is_lora?: boolean;
  lora_rank?: number;
  model_name?: string;
  /** SDK 0.38: the optimizer chosen at create_model (older servers: absent, i.e. AdamW). */
  optimizer_config?: { type: string; [key: string]: unknown };
}

export interface WeightsInfo {
  base_model: string;
  is_lora: boolean;
  lora_rank?: number | null;
  train_unembed?: boolean | null;
  train_mlp?: boolean | null;
  train_attn?: boolean | null;
}

export interface Checkpoint {
  checkpoint_id: string; // "<kind>/<name>"
  checkpoint_type: 'training' | 'sampler';
  tinker_path: string;
  time?: string;
  size_bytes?: number | null;
  public?: boolean;
  expires_at?: string | null;
}

/**
 * A submitted request. `seqIds` is how many sequence ids the submission consumed (a chunked
 * forward_backward consumes one per chunk), so callers can advance their counter. `result()`
 * polls the future(s) to completion; calling it twice returns the same promise.
 */
export interface Submitted<T> {
  seqIds: number;
  /**
   * The server futures result() combines, when it is a plain poll of them: small strings any
   * process can await later (see TrainingSession.forwardBackwardResult), so a step submitted by
   * one activity can be collected by another.
   */
  requestIds?: string[];
  result(): Promise<T>;
}

/**
 * Sequence ids (DESIGN §3.5, docs/tinker-client.md): every training request of a model carries a
 * seq id; the server runs a model's requests strictly in seq order and deduplicates on
 * (model id, seq id). The model's create_model is seq 0, so its first training request is seq 1.
 * The CALLER (the workflow's step counter) chooses the ids: a call uses `seqId`,
 * `seqId + 1`, … `seqId + seqIds - 1` (one per forward/forward_backward chunk, one for each other
 * request) and must resend the very same `seqId` with the very same payload when it retries the
 * call. The client never invents or advances ids on its own.
 */
export interface SeqOpts {
  /** First sequence id to use (integer ≥ 1). Resend the same value on every retry of the same logical call. */
  seqId: number;
}

export interface ForwardOpts extends SeqOpts {
  lossFnConfig?: Record<string, number>;
}

export interface SaveOpts extends SeqOpts {
  ttlSeconds?: number | null;
  overwrite?: boolean;
}

/** A training model on the server, addressable from any process by its model id. */
export interface TrainingSession {
  readonly modelId: string;
  getInfo(): Promise<GetInfoResponse>;
  /** forward_backward with forward_only (no gradients). Resolves once every chunk is submitted. */
  forward(data: Datum[], lossFn: LossFn, opts: ForwardOpts): Promise<Submitted<ForwardBackwardOutput>>;
  /** Chunked per the server's limits (§5.3); consumes one seq id per chunk. */
  forwardBackward(data: Datum[], lossFn: LossFn, opts: ForwardOpts): Promise<Submitted<ForwardBackwardOutput>>;
  /**
   * Client-side custom loss (SDK forward_backward_custom): forward → loss and d loss/d logprobs in
   * TypeScript → forward_backward(cross_entropy, weights = −grad). Consumes the ids of both calls.
   */
  forwardBackwardCustom(data: Datum[], lossFn: CustomLossFn, opts: SeqOpts): Promise<CustomLossSubmitted>;
  /** AdamParams for an AdamW model; another family's params (DimuonParams) for a model created with it. */
  optimStep(params: OptimParams, opts: SeqOpts): Promise<Submitted<OptimStepResponse>>;
  /** The result of a forward_backward (or forward) submitted earlier, by its chunks' request ids. */
  forwardBackwardResult(requestIds: string[]): Promise<ForwardBackwardOutput>;
  /** The result of an optim_step submitted earlier, by its request id. */
  optimStepResult(requestId: string): Promise<OptimStepResponse>;
  /** save_weights (training state incl. optimizer) → tinker://<run>/weights/<name>. */
  saveState(name: string, opts: SaveOpts): Promise<Submitted<{ path: string }>>;
  /** save_weights_for_sampler (named) → tinker://<run>/sampler_weights/<name>. */
  saveWeightsForSampler(name: string, opts: SaveOpts): Promise<Submitted<{ path: string }>>;
  loadState(path: string, opts: SeqOpts & { withOptimizer: boolean }): Promise<Submitted<{ path: string }>>;
  /**
   * Ephemeral save_weights_for_sampler (SDK save_weights_and_get_sampling_client): consumes one
   * seq id and returns a sampler that lives only as long as the server session. Prefer named
   * sampler paths in workflows (DESIGN §3.6).
   */
  saveWeightsAndGetSamplingSession(opts: SeqOpts & { samplingSessionSeqId?: number }): Promise<Submitted<SamplingSession>>;
}

/**
 * A custom-loss forward_backward: `requestIds` are the backward's futures, and `lossMetrics` (the
 * custom loss and its function's metrics, computed client-side) override the server's metrics in
 * result(), so a process that awaits the futures later by id can merge them the same way.
 */
export interface CustomLossSubmitted extends Submitted<ForwardBackwardOutput> {
  lossMetrics: Record<string, number>;
}

/** Result of a custom loss: the loss value, its gradient per datum w.r.t. logprobs, metrics. */
export interface CustomLossResult {
  loss: number;
  /** d loss / d logprobs_d, one float array per datum (same length as its logprobs). */
  grads: number[][];
  metrics: Record<string, number>;
}
export type CustomLossFn = (data: Datum[], logprobs: number[][]) => CustomLossResult;

export interface SamplingSession {
  readonly samplingSessionId: string;
  sample(prompt: ModelInput, numSamples: number, params: SamplingParams, opts?: SampleOpts): Promise<SampleResponse>;
  /** Logprob of each prompt token under the sampler's weights (first entry null; with
   *  `lastN`, only the last N are scored and the rest are null). */
  computeLogprobs(prompt: ModelInput, lastN?: number): Promise<Array<number | null>>;
}

/** Options of SamplingClient.sample (SDK 0.38 names in comments). */
export interface SampleOpts {
  includePromptLogprobs?: boolean; // include_prompt_logprobs
  topkPromptLogprobs?: number; // topk_prompt_logprobs
  /** topk_sample_logprobs: top-k logprobs at every sampled position (`SampledSequence.topk_logprobs`). */
  topkSampleLogprobs?: number;
  /** target_prompt_logprobs: int64 [len(prompt) - 1, K] token ids (-1 = none), dense or sparse CSR. */
  targetPromptLogprobs?: TensorData;
  /** prompt_alt_tokens_k: k draws at the request's temperature at every prompt position after the first. */
  promptAltTokensK?: number;
  /** prompt_logprobs_last_n: score only the last N prompt tokens (needs includePromptLogprobs). */
  promptLogprobsLastN?: number;
  /**
   * record_stability_info (SDK 0.38): the server keeps what StableReinforce trains on for each
   * sampled sequence (one day, restarted by each training request that uses it).
   */
  recordStabilityInfo?: boolean;
}

export interface CreateModelOpts {
  baseModel: string;
  lora: LoraConfig;
  /** optimizer_config (SDK 0.38); default AdamW. A server that cannot train the family refuses it. */
  optimizer?: OptimizerConfig;
  userMetadata?: Record<string, string>;
}

/** Moving checkpoints between servers: the protocol's archive download, the local engine's import. */
export interface CheckpointTransfer {
  checkpointArchive(path: string): Promise<Buffer>;
  /** `ttlSeconds`: the importing server deletes it after that long (none: kept). */
  importCheckpoint(path: string, tar: Buffer, opts?: { ttlSeconds?: number }): Promise<{ imported: boolean }>;
}

/** What sampling needs of a backend: sessions on a checkpoint or a base model. */
export interface SamplingBackend {
  /** A sampler over a `tinker://…/sampler_weights/…` path or a base model name. */
  createSamplingSession(source: { modelPath: string } | { baseModel: string }): Promise<SamplingSession>;
}

export interface TrainingBackend extends SamplingBackend {
  capabilities(): Promise<ServerCapabilities>;
  createTrainingSession(opts: CreateModelOpts): Promise<TrainingSession>;
  /** Attach to an existing model (e.g. created by an earlier activity, maybe on another worker). */
  openTrainingSession(modelId: string): TrainingSession;
  /**
   * create_model for the checkpoint's base model and LoRA rank, then load_weights (seq id 1 of the
   * new model). The returned session's next free seq id is `nextSeqId`.
   */
  createTrainingSessionFromState(path: string, opts: { withOptimizer: boolean; userMetadata?: Record<string, string> }): Promise<{ session: TrainingSession; nextSeqId: number }>;
  weightsInfo(path: string): Promise<WeightsInfo>;
  listCheckpoints(trainingRunId: string): Promise<Checkpoint[]>;
  deleteCheckpoint(trainingRunId: string, checkpointId: string): Promise<void>;
  unloadModel(modelId: string): Promise<void>;
  close(): Promise<void>;
}

export type BackendErrorKind =
  | 'not_found'
  | 'conflict'
  | 'auth'
  | 'bad_request'
  | 'server'
  | 'transport'
  | 'timeout'
  | 'expired'
  | 'other';

/** An error from the server or the transport, with what the caller needs to decide recovery. */
export class BackendError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly requestType: string,
    readonly detail: unknown,
    /**
     * 'not_found' lets workflows detect a lost model (engine restart) and restore from checkpoint;
     * 'conflict' = a seq id was reused with a different payload (or another definitive 409);
     * 'expired' = the server dropped the future (HTTP 410): resubmitting the same seq ids is safe.
     */
    readonly kind: BackendErrorKind,
  ) {
    super(message);
    this.name = 'BackendError';
  }
}

/**
 * The backend has failed to answer for longer than the caller allows (a run's `failover.after_s`):
 * not retried here, so that the run can move to another backend.
 */
export class BackendLostError extends BackendError {
  constructor(message: string, requestType: string) {
    super(message, undefined, requestType, undefined, 'transport');
    this.name = 'TrainingBackendLost';
  }
}
