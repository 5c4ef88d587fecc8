// /v1/chat/completions without the transport: the OpenAI request as a chat turn (chat-turn.ts:
// rendered, sampled, parsed), answered in the OpenAI shape. `cookbook chat` calls it directly; the
// server wraps it in JSON or SSE.
import { randomUUID } from 'node:crypto';
import { conversationFromOpenAI, openAIAssistantMessage, type OpenAIAssistantMessage } from '../cookbook/renderers/openai-format.js';
import { badRequest, unsupported } from './errors.js';
import { chatLogprobs, type ChatTokenLogprob } from './logprobs.js';
import { sampleTurn } from './chat-turn.js';
import { refuseUnsupported, stopStrings, type ChatRequest } from './requests.js';
import type { ServedModel } from './served-model.js';

export type FinishReason = 'stop' | 'length' | 'tool_calls';

export interface ChatChoice {
  index: number;
  message: OpenAIAssistantMessage;
  logprobs: { content: ChatTokenLogprob[] } | null;
  finish_reason: FinishReason;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: ChatChoice[];
  usage: Usage;
}

export interface CompletionLimits {
  /** max_tokens when a request gives none (the context permitting). */
  defaultMaxTokens: number;
}

/**
 * `onSampling` runs once the request has passed every check and sampling starts: a stream opens
 * there, so a bad request still gets its 4xx status rather than an error inside a 200 stream.
 */
export async function completeChat(model: ServedModel, req: ChatRequest, limits: CompletionLimits, onSampling?: () => void): Promise<ChatCompletion> {
  refuseUnsupported(req);
  if (req.response_format && req.response_format.type !== 'text') throw unsupported('response_format', `only {"type": "text"} is supported, not "${req.response_format.type}"`);
  if (req.top_logprobs && !req.logprobs) throw badRequest('top_logprobs needs logprobs: true', 'top_logprobs');
  const top = req.logprobs ? (req.top_logprobs ?? 0) : 0;
  const turn = await sampleTurn(
    model,
    {
      ...req,
      conversation: conversationFromOpenAI(model.renderer, req.messages, req.tools, req.tool_choice),
      maxTokens: req.max_completion_tokens ?? req.max_tokens,
      maxTokensParam: req.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens',
      stops: stopStrings(req.stop),
      topLogprobs: top,
      topLogprobsParam: 'top_logprobs',
    },
    limits.defaultMaxTokens,
    onSampling,
  );
  const choices = turn.completions.map(({ seq, cut, message: parsed }, index): ChatChoice => {
    const message = openAIAssistantMessage(parsed);
    const finish: FinishReason = !cut.stopped ? 'length' : message.tool_calls ? 'tool_calls' : 'stop';
    return { index, message, logprobs: req.logprobs ? chatLogprobs(model.tokenizer, seq, cut.kept, top, model.baseUrl) : null, finish_reason: finish };
  });
  const { promptTokens, completionTokens } = turn;
  return {
    id: `chatcmpl-${randomUUID().replaceAll('-', '')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: model.id,
    choices,
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}
