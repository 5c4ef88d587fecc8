// POST /v1/messages without the transport: the Anthropic request as a chat turn (chat-turn.ts:
// rendered with the model's renderer, sampled, parsed) answered as an Anthropic message: the
// renderer's reasoning as a thinking block, the text, each parsed tool call as a tool_use block,
// and stop_reason from how the sample ended.
import { randomBytes } from 'node:crypto';
import { loadMessageImages } from '../../cookbook/images/messages.js';
import { modelInputLength } from '../../cookbook/model-input.js';
import { openAIAssistantMessage } from '../../cookbook/renderers/openai-format.js';
import type { CompletionLimits } from '../chat-completion.js';
import { sampleTurn } from '../chat-turn.js';
import { stopStrings } from '../requests.js';
import type { ServedModel } from '../served-model.js';
import { conversationFromAnthropic } from './conversation.js';
import type { CountTokensRequest, MessagesRequest } from './requests.js';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export type ContentBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: ContentBlock[];
  stop_reason: StopReason;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** `onSampling(promptTokens)`: as for sampleTurn, once every check has passed. */
export async function completeMessages(model: ServedModel, req: MessagesRequest, limits: CompletionLimits, onSampling?: (promptTokens: number) => void): Promise<AnthropicMessage> {
  const { conversation, toolsForbidden } = conversationFromAnthropic(model.renderer, req);
  const stops = stopStrings(req.stop_sequences);
  const turn = await sampleTurn(
    model,
    { temperature: req.temperature, top_p: req.top_p, top_k: req.top_k, conversation, maxTokens: req.max_tokens, maxTokensParam: 'max_tokens', stops, topLogprobs: 0, topLogprobsParam: 'top_logprobs' },
    limits.defaultMaxTokens,
    onSampling,
  );
  const { cut, message: parsed } = turn.completions[0];
  const answer = openAIAssistantMessage(toolsForbidden ? { ...parsed, tool_calls: undefined } : parsed, () => newId('toolu'));
  const content: ContentBlock[] = [];
  if (answer.reasoning_content) content.push({ type: 'thinking', thinking: answer.reasoning_content, signature: '' });
  const calls = answer.tool_calls ?? [];
  if (answer.content || !calls.length) content.push({ type: 'text', text: answer.content ?? '' });
  for (const c of calls) content.push({ type: 'tool_use', id: c.id, name: c.function.name, input: toolInput(c.function.arguments) });
  const byUserStop = cut.cutBy !== undefined && stops.includes(cut.cutBy);
  const stopReason: StopReason = calls.length ? 'tool_use' : byUserStop ? 'stop_sequence' : cut.stopped ? 'end_turn' : 'max_tokens';
  return {
    id: newId('msg'),
    type: 'message',
    role: 'assistant',
    model: model.id,
    content,
    stop_reason: stopReason,
    stop_sequence: stopReason === 'stop_sequence' ? cut.cutBy! : null,
    usage: { input_tokens: turn.promptTokens, output_tokens: turn.completionTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}

/** A tool call's arguments as tool_use input: the JSON object the model wrote, else its raw text under `_raw_arguments` (nothing invented). */
function toolInput(args: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // not JSON: kept raw below
  }
  return { _raw_arguments: args };
}

/** POST /v1/messages/count_tokens: the rendered prompt's length. */
export async function countTokens(model: ServedModel, req: CountTokensRequest): Promise<{ input_tokens: number }> {
  const { conversation } = conversationFromAnthropic(model.renderer, req);
  return { input_tokens: modelInputLength(model.renderer.buildGenerationPrompt(await loadMessageImages(conversation))) };
}
