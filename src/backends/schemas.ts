// zod shapes of every JSON body the client reads (§3, §4, §7). Unknown fields are ignored (the SDK
// models use extra="ignore"); `null` is accepted wherever the SDK declares a field optional,
// because JSON-era servers send explicit nulls (§1.5).
import { z } from 'zod';

const optStr = z.string().nullish();
const optNum = z.number().nullish();
const optBool = z.boolean().nullish();

/** POST /api/v1/client/config (§3.1). Every field optional; defaults are the SDK's. */
export const ClientConfigResponse = z
  .object({
    pjwt_auth_enabled: optBool,
    credential_default_source: optStr,
    parallel_fwdbwd_chunks: optBool,
    proto_compress_fwdbwd: optBool,
    fwdbwd_max_chunk_len: optNum,
    fwdbwd_max_chunk_bytes_count: optNum,
    sample_max_concurrent_requests: optNum,
    sample_no_retries: optBool,
    // 0.22.3–0.24 flags: an explicit `proto_write_fwdbwd: false` marks a JSON-dialect server.
    proto_write_fwdbwd: optBool,
    fwd_via_fwdbwd: optBool,
  })
  .loose();
export type ClientConfigResponse = z.infer<typeof ClientConfigResponse>;

export const AuthTokenResponse = z.object({ jwt: z.string() }).loose();

export const CreateSessionResponse = z
  .object({
    session_id: z.string(),
    info_message: optStr,
    warning_message: optStr,
    error_message: optStr,
  })
  .loose();

export const CreateSamplingSessionResponse = z.object({ sampling_session_id: z.string() }).loose();
/** The protocol's answer, or a future whose result is that answer (hatchery-core 0.3). */
export const CreateSamplingSessionAnswer = z.union([CreateSamplingSessionResponse, z.object({ request_id: z.string() }).loose()]);

export const UntypedFuture = z
  .object({
    request_id: z.string(),
    model_id: optStr,
    // SDK 0.38+: asample promises carry one id per sample, aligned with the final sequences.
    sample_sequence_ids: z.array(z.string()).nullish(),
  })
  .loose();

export const TryAgain = z
  .object({
    type: z.literal('try_again'),
    request_id: optStr,
    queue_state: optStr,
    queue_state_reason: optStr,
  })
  .loose();

export const FutureError = z
  .object({ error: z.string(), category: z.string().nullish() })
  .loose();

export const CompleteMetadata = z
  .object({ status: z.literal('complete_metadata'), response_payload_size: z.number().nullish() })
  .loose();

export const CreateModelResponse = z.object({ model_id: z.string() }).loose();

const TensorDataJson = z.object({
  data: z.array(z.number()),
  dtype: z.enum(['int64', 'float32']),
  shape: z.array(z.number().int()).nullish(),
  sparse_crow_indices: z.array(z.number().int()).nullish(),
  sparse_col_indices: z.array(z.number().int()).nullish(),
});

export const ForwardBackwardOutputJson = z
  .object({
    loss_fn_output_type: z.string(),
    loss_fn_outputs: z.array(z.record(z.string(), TensorDataJson)),
    metrics: z.record(z.string(), z.number()),
  })
  .loose();

export const OptimStepResponse = z
  .object({ metrics: z.record(z.string(), z.number()).nullish() })
  .loose();

export const SaveWeightsResponse = z.object({ path: z.string() }).loose();

export const SaveWeightsForSamplerResponse = z
  .object({ path: optStr, sampling_session_id: optStr })
  .loose();

export const LoadWeightsResponse = z.object({ path: optStr, model_id: optStr }).loose();

export const UnloadModelResponse = z.object({ model_id: optStr }).loose();

const TopkRowsJson = z.array(z.array(z.tuple([z.number().int(), z.number()])).nullable());

export const SampleResponseJson = z
  .object({
    sequences: z.array(
      z.object({
        tokens: z.array(z.number().int()),
        logprobs: z.array(z.number()).nullish(),
        stop_reason: z.enum(['length', 'stop']),
        topk_logprobs: TopkRowsJson.nullish(),
      }),
    ),
    prompt_logprobs: z.array(z.number().nullable()).nullish(),
    topk_prompt_logprobs: TopkRowsJson.nullish(),
    prompt_cache_hit_tokens: optNum,
    target_prompt_logprobs: TensorDataJson.nullish(),
    prompt_alt_tokens: z.object({ tokens: TensorDataJson, logprobs: TensorDataJson }).nullish(),
  })
  .loose();

export const ServerCapabilities = z
  .object({
    supported_models: z.array(
      // hatchery-core names its models under `model_id`.
      z.object({ model_name: optStr, model_id: optStr, max_context_length: optNum }).loose(),
    ),
  })
  .loose();

export const GetInfoResponse = z
  .object({
    model_id: z.string(),
    model_data: z
      .object({ arch: optStr, model_name: optStr, tokenizer_id: optStr })
      .loose(),
    is_lora: optBool,
    lora_rank: optNum,
    model_name: optStr,
    optimizer_config: z.object({ type: z.string() }).loose().nullish(),
  })
  .loose();

export const WeightsInfoResponse = z
  .object({
    base_model: z.string(),
    is_lora: z.boolean(),
    lora_rank: optNum,
    train_unembed: optBool,
    train_mlp: optBool,
    train_attn: optBool,
  })
  .loose();

export const Checkpoint = z
  .object({
    checkpoint_id: z.string(),
    checkpoint_type: z.enum(['training', 'sampler']),
    tinker_path: z.string(),
    time: optStr,
    size_bytes: optNum,
    public: optBool,
    expires_at: optStr,
  })
  .loose();

export const CheckpointsListResponse = z
  .object({
    checkpoints: z.array(Checkpoint),
    cursor: z
      .object({ offset: optNum, limit: optNum, total_count: optNum })
      .loose()
      .nullish(),
  })
  .loose();

export const TrainingRun = z
  .object({
    training_run_id: z.string(),
    base_model: z.string(),
    model_owner: optStr,
    is_lora: optBool,
    corrupted: optBool,
    lora_rank: optNum,
    last_request_time: optStr,
    last_checkpoint: Checkpoint.nullish(),
    last_sampler_checkpoint: Checkpoint.nullish(),
    user_metadata: z.record(z.string(), z.string()).nullish(),
  })
  .loose();
export type TrainingRun = z.infer<typeof TrainingRun>;

export const TrainingRunsResponse = z
  .object({
    training_runs: z.array(TrainingRun),
    cursor: z.object({ offset: optNum, limit: optNum, total_count: optNum }).loose().nullish(),
  })
  .loose();

export const GetSamplerResponse = z
  .object({ sampler_id: z.string(), base_model: z.string(), model_path: optStr })
  .loose();
export type GetSamplerResponse = z.infer<typeof GetSamplerResponse>;

export const HealthResponse = z.object({ status: z.string() }).loose();
