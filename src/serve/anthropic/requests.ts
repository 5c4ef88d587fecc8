// The request body of POST /v1/messages (the Anthropic Messages API): what this server reads from
// it, with the API's ranges. Content blocks are checked one by one where they are converted
// (conversation.ts), so an unsupported block is named with its place. Fields that change nothing
// here (metadata, service_tier, cache_control on blocks, …) are accepted and ignored.
import { z } from 'zod';
import { ApiError } from '../errors.js';

const Block = z.looseObject({ type: z.string() });
export type Block = z.infer<typeof Block>;

const MessageIn = z.looseObject({
  // `system` inside messages is Claude Code's beta shape; it is folded into the system prompt.
  role: z.enum(['user', 'assistant', 'system']),
  content: z.union([z.string(), z.array(Block)]),
});
export type AnthropicMessageIn = z.infer<typeof MessageIn>;

const ToolIn = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
  /** Absent or "custom": a client tool. Anthropic's server tools (bash_…, web_search_…) are refused. */
  type: z.string().nullish(),
});
export type AnthropicToolIn = z.infer<typeof ToolIn>;

export const MessagesRequest = z.looseObject({
  model: z.string(),
  max_tokens: z.number().int().min(1),
  messages: z.array(MessageIn),
  system: z.union([z.string(), z.array(Block)]).nullish(),
  stop_sequences: z.array(z.string()).nullish(),
  stream: z.boolean().nullish(),
  temperature: z.number().min(0).max(1).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  top_k: z.number().int().min(1).nullish(),
  tools: z.array(ToolIn).nullish(),
  tool_choice: z.looseObject({ type: z.enum(['auto', 'any', 'tool', 'none']), name: z.string().optional() }).nullish(),
  /** Accepted (Claude Code enables it by default); the renderer's reasoning comes back as thinking blocks either way. */
  thinking: z.looseObject({ type: z.string() }).nullish(),
  /** `effort` is a hint for Claude's reasoning and changes nothing here; `format` (structured output) is refused. */
  output_config: z.looseObject({ format: z.looseObject({ type: z.string() }).nullish() }).nullish(),
});
export type MessagesRequest = z.infer<typeof MessagesRequest>;

/** count_tokens takes the same prompt fields, without max_tokens. */
export const CountTokensRequest = MessagesRequest.omit({ max_tokens: true });
export type CountTokensRequest = z.infer<typeof CountTokensRequest>;

/** An invalid request, as the Messages API words it: `<dotted.path>: <what is wrong>`. */
export const invalid = (message: string) => new ApiError(400, message, 'invalid_request_error');

/** Parses a body with `schema`; the first problem is the 400. */
export function parseMessagesRequest<T>(schema: z.ZodType<T>, body: unknown): T {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalid('the request body must be a JSON object');
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = issue.path.map(String).join('.');
  const missing = issue.code === 'invalid_type' && isAbsent(body, issue.path);
  throw invalid(`${path || 'body'}: ${missing ? 'Field required' : issue.message}`);
}

function isAbsent(body: unknown, path: readonly PropertyKey[]): boolean {
  let parent: unknown = body;
  for (const key of path.slice(0, -1)) parent = parent != null && typeof parent === 'object' ? (parent as Record<PropertyKey, unknown>)[key] : undefined;
  return parent != null && typeof parent === 'object' && (parent as Record<PropertyKey, unknown>)[path[path.length - 1]] === undefined;
}
