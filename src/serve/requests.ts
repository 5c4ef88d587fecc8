// The request bodies of /v1/chat/completions and /v1/completions: what this server reads from them,
// checked with the OpenAI API's ranges. Fields a client may send that do not change sampling
// (user, metadata, store, parallel_tool_calls, …) are accepted and ignored; fields that would
// change it and cannot be honoured are refused by name (refuseUnsupported) rather than ignored.
import { z } from 'zod';
import { ApiError, badRequest, unsupported } from './errors.js';

const ContentParts = z.array(z.looseObject({ type: z.string() }));

const ToolCallIn = z.object({
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

const ChatMessageIn = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), ContentParts, z.null()]).optional(),
  reasoning_content: z.string().nullish(),
  tool_calls: z.array(ToolCallIn).nullish(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
});
export type ChatMessageIn = z.infer<typeof ChatMessageIn>;

const ToolIn = z.object({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ToolIn = z.infer<typeof ToolIn>;

const Stop = z.union([z.string(), z.array(z.string()).max(16)]).nullish();

/** Sampling knobs both endpoints share, with the OpenAI API's ranges. */
const SamplingFields = {
  model: z.string({ error: 'you must provide a model parameter' }),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  /** vLLM's extension, which the Tinker protocol has too. */
  top_k: z.number().int().min(-1).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  max_tokens: z.number().int().min(1).nullish(),
  seed: z.number().int().nullish(),
  stop: Stop,
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullish(),
  presence_penalty: z.number().nullish(),
  frequency_penalty: z.number().nullish(),
  logit_bias: z.record(z.string(), z.number()).nullish(),
};

export const ChatRequest = z.looseObject({
  ...SamplingFields,
  messages: z.array(ChatMessageIn).min(1, 'messages must hold at least one message'),
  max_completion_tokens: z.number().int().min(1).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  tools: z.array(ToolIn).nullish(),
  tool_choice: z.union([z.enum(['none', 'auto', 'required']), z.looseObject({ type: z.string() })]).nullish(),
  response_format: z.looseObject({ type: z.string() }).nullish(),
});
export type ChatRequest = z.infer<typeof ChatRequest>;

export const CompletionRequest = z.looseObject({
  ...SamplingFields,
  prompt: z.union([z.string(), z.array(z.string()).min(1), z.array(z.number().int().min(0)).min(1), z.array(z.array(z.number().int().min(0)).min(1)).min(1)]),
  /** 0 only with echo: score the prompt, sample nothing. */
  max_tokens: z.number().int().min(0).nullish(),
  logprobs: z.number().int().min(0).max(5).nullish(),
  echo: z.boolean().nullish(),
  suffix: z.string().nullish(),
  best_of: z.number().int().min(1).nullish(),
});
export type CompletionRequest = z.infer<typeof CompletionRequest>;

/** Parses a body with `schema`, turning the first problem into the 400 a client expects. */
export function parseRequest<T>(schema: z.ZodType<T>, body: unknown): T {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('the request body must be a JSON object', null, null);
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const param = issue.path.length ? issue.path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i ? `.${String(p)}` : String(p))).join('') : null;
  const missing = issue.code === 'invalid_type' && isAbsent(body, issue.path);
  throw new ApiError(400, missing ? `missing required parameter: '${param}'` : `invalid ${param ?? 'request'}: ${issue.message}`, 'invalid_request_error', param, missing ? 'missing_required_parameter' : 'invalid_value');
}

/** Whether the value at `path` is absent from its parent object. */
function isAbsent(body: unknown, path: readonly PropertyKey[]): boolean {
  let parent: unknown = body;
  for (const key of path.slice(0, -1)) parent = parent != null && typeof parent === 'object' ? (parent as Record<PropertyKey, unknown>)[key] : undefined;
  return parent != null && typeof parent === 'object' && (parent as Record<PropertyKey, unknown>)[path[path.length - 1]] === undefined;
}

/** Parameters with a meaning this server cannot give them: refused unless at their neutral value. */
export function refuseUnsupported(req: { presence_penalty?: number | null; frequency_penalty?: number | null; logit_bias?: Record<string, number> | null }): void {
  if (req.presence_penalty) unsupportedThrow('presence_penalty', 'penalties are not supported by the Tinker sampling API (send 0 or leave it out)');
  if (req.frequency_penalty) unsupportedThrow('frequency_penalty', 'penalties are not supported by the Tinker sampling API (send 0 or leave it out)');
  if (req.logit_bias && Object.keys(req.logit_bias).length) unsupportedThrow('logit_bias', 'logit bias is not supported by the Tinker sampling API');
}

function unsupportedThrow(param: string, why: string): never {
  throw unsupported(param, why);
}

/** `stop` as a list of non-empty strings. */
export function stopStrings(stop: string | string[] | null | undefined): string[] {
  const list = stop == null ? [] : typeof stop === 'string' ? [stop] : stop;
  return list.filter((s) => s.length > 0);
}
