// The JSON dialect (§1.5, §7): request bodies with datums, and JSON results mapped onto the
// public types. Bodies follow the ≥0.18 convention (defaults and `type` tags sent, nulls omitted),
// which JSON-era servers accept as well.
import type { z } from 'zod';
import type { ForwardBackwardOutputJson, SampleResponseJson } from './schemas.js';
import { BackendError, type Datum, type ForwardBackwardOutput, type ModelInput, type SampleResponse, type TensorData } from './types.js';

export function tensorToJson(t: TensorData): Record<string, unknown> {
  return { data: t.data, dtype: t.dtype, shape: t.shape ?? [t.data.length] };
}

export function modelInputToJson(m: ModelInput): Record<string, unknown> {
  return {
    chunks: m.chunks.map((c) => {
      if (c.type === 'encoded_text') return { tokens: c.tokens, type: 'encoded_text' };
      const image: Record<string, unknown> = { data: c.data, format: c.format, type: 'image' };
      if (c.expected_tokens !== undefined) image.expected_tokens = c.expected_tokens;
      return image;
    }),
  };
}

export function datumToJson(d: Datum): Record<string, unknown> {
  return {
    loss_fn_inputs: Object.fromEntries(Object.entries(d.loss_fn_inputs).map(([k, t]) => [k, tensorToJson(t)])),
    model_input: modelInputToJson(d.model_input),
  };
}

/** Body of POST /api/v1/forward_backward (wrapper `forward_backward_input`) or /forward (`forward_input`). */
export function forwardBackwardJsonBody(args: {
  modelId: string;
  seqId: number;
  data: Datum[];
  lossFn: string;
  lossFnConfig?: Record<string, number>;
  forwardOnly: boolean;
}): Record<string, unknown> {
  // Provenance spans travel only on the protobuf path (SDK 0.38): here they are dropped, which only
  // stable_reinforce cannot do without.
  if (args.lossFn === 'stable_reinforce') {
    throw new BackendError(
      "loss_fn 'stable_reinforce' needs provenance spans, which only the protobuf forward_backward dialect carries; this server speaks JSON only",
      undefined,
      args.forwardOnly ? 'forward' : 'forward_backward',
      undefined,
      'bad_request',
    );
  }
  const input: Record<string, unknown> = { data: args.data.map(datumToJson), loss_fn: args.lossFn };
  if (args.lossFnConfig && Object.keys(args.lossFnConfig).length) input.loss_fn_config = args.lossFnConfig;
  return {
    [args.forwardOnly ? 'forward_input' : 'forward_backward_input']: input,
    model_id: args.modelId,
    seq_id: args.seqId,
  };
}

function densify(t: z.infer<typeof ForwardBackwardOutputJson>['loss_fn_outputs'][number][string]): TensorData {
  if (t.sparse_crow_indices && t.sparse_col_indices && t.shape && t.shape.length === 2) {
    // CSR → dense row-major (§7.2); only produced for 2-D tensors.
    const [rows, cols] = t.shape;
    const dense = new Array<number>(rows * cols).fill(0);
    for (let r = 0; r < rows; r++) {
      for (let i = t.sparse_crow_indices[r]; i < t.sparse_crow_indices[r + 1]; i++) {
        dense[r * cols + t.sparse_col_indices[i]] = t.data[i];
      }
    }
    return { data: dense, dtype: t.dtype, shape: [rows, cols] };
  }
  return { data: t.data, dtype: t.dtype, shape: t.shape ?? [t.data.length] };
}

export function forwardBackwardOutputFromJson(o: z.infer<typeof ForwardBackwardOutputJson>): ForwardBackwardOutput {
  return {
    loss_fn_output_type: o.loss_fn_output_type,
    loss_fn_outputs: o.loss_fn_outputs.map((rec) => Object.fromEntries(Object.entries(rec).map(([k, t]) => [k, densify(t)]))),
    metrics: o.metrics,
  };
}

export function sampleResponseFromJson(o: z.infer<typeof SampleResponseJson>): SampleResponse {
  return {
    sequences: o.sequences.map((s) => ({
      stop_reason: s.stop_reason, tokens: s.tokens, logprobs: s.logprobs ?? null,
      ...(s.topk_logprobs ? { topk_logprobs: s.topk_logprobs } : {}),
    })),
    prompt_logprobs: o.prompt_logprobs ?? null,
    topk_prompt_logprobs: o.topk_prompt_logprobs ?? null,
    // As the proto decoder: 0 (a server without a prefix cache) reads as absent.
    ...(o.prompt_cache_hit_tokens ? { prompt_cache_hit_tokens: o.prompt_cache_hit_tokens } : {}),
    ...(o.target_prompt_logprobs ? { target_prompt_logprobs: resultTensor(o.target_prompt_logprobs) } : {}),
    ...(o.prompt_alt_tokens
      ? { prompt_alt_tokens: { tokens: resultTensor(o.prompt_alt_tokens.tokens), logprobs: resultTensor(o.prompt_alt_tokens.logprobs) } }
      : {}),
  };
}

/** A result tensor as sent: a sparse CSR layout stays sparse (as SDK 0.38 returns it). */
function resultTensor(t: z.infer<typeof ForwardBackwardOutputJson>['loss_fn_outputs'][number][string]): TensorData {
  if (!t.sparse_crow_indices) return densify(t);
  return { data: t.data, dtype: t.dtype, shape: t.shape ?? undefined, sparse_crow_indices: t.sparse_crow_indices, sparse_col_indices: t.sparse_col_indices ?? [] };
}
