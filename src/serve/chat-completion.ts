// /v1/chat/completions without the transport: render the conversation with the model's renderer,
// sample n completions, parse each back into text, reasoning and tool calls. `cookbook chat` calls
// it directly; the server wraps it in JSON or SSE.
import { randomUUID } from 'node:crypto';
import { RendererError } from '../cookbook/errors.js';
import { loadMessageImages } from '../cookbook/images/messages.js';
import { modelInputLength } from '../cookbook/model-input.js';
import type { Message } from '../cookbook/renderers/types.js';
import { conversationFromOpenAI, openAIAssistantMessage, type OpenAIAssistantMessage } from '../cookbook/renderers/openai-format.js';
import { badRequest, unsupported } from './errors.js';
import { chatLogprobs, type ChatTokenLogprob } from './logprobs.js';
import { refuseUnsupported, stopStrings, type ChatRequest } from './requests.js';
import { maxTokensFor, sampleFor, samplingParams } from './sampling.js';
import type { ServedModel } from './served-model.js';
import { cutCompletion, samplingStop, splitStops } from './stops.js';

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
  const { renderer, tokenizer } = model;
  // Images (data: URLs, local files) are decoded here; a bad one is a 400 naming its part.
  const conversation = await loadMessageImages(conversationFromOpenAI(renderer, req.messages, req.tools, req.tool_choice));
  const prompt = renderer.buildGenerationPrompt(conversation);
  const promptTokens = modelInputLength(prompt);
  const param = req.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
  const maxTokens = maxTokensFor(model, promptTokens, req.max_completion_tokens ?? req.max_tokens, limits.defaultMaxTokens, param);
  const rendererStops = splitStops(renderer.getStopSequences());
  const userStops = stopStrings(req.stop);
  const n = req.n ?? 1;
  const top = req.logprobs ? (req.top_logprobs ?? 0) : 0;
  onSampling?.();
  const response = await sampleFor(model, prompt, n, samplingParams(req, maxTokens, samplingStop(rendererStops, userStops, tokenizer)), top, 'top_logprobs');

  // What the renderer's parser expects after a response: its own end-of-turn marker.
  const terminator = rendererStops.tokens.length ? [rendererStops.tokens[0]] : tokenizer.encode(rendererStops.strings[0] ?? '', { addSpecialTokens: false });
  const choices = response.sequences.map((seq, index): ChatChoice => {
    const cut = cutCompletion(tokenizer, seq, rendererStops.tokens, [...userStops, ...rendererStops.strings]);
    const body = cut.cutBy !== undefined ? tokenizer.encode(cut.text, { addSpecialTokens: false }) : seq.tokens.slice(0, cut.kept);
    const message = openAIAssistantMessage(parseOrText(model, [...body, ...terminator], cut.text));
    const finish: FinishReason = !cut.stopped ? 'length' : message.tool_calls ? 'tool_calls' : 'stop';
    return { index, message, logprobs: req.logprobs ? chatLogprobs(tokenizer, seq, cut.kept, top, model.baseUrl) : null, finish_reason: finish };
  });
  const completionTokens = response.sequences.reduce((s, q) => s + q.tokens.length, 0);
  return {
    id: `chatcmpl-${randomUUID().replaceAll('-', '')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: model.id,
    choices,
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}

/** The renderer's parse of a response; should it refuse the tokens, the plain text is the answer. */
function parseOrText(model: ServedModel, tokens: number[], text: string): Message {
  try {
    return model.renderer.parseResponse(tokens).message;
  } catch (err) {
    if (err instanceof RendererError) return { role: 'assistant', content: text };
    throw err;
  }
}
