// One chat turn without an API around it: the conversation rendered with the model's renderer,
// n completions sampled, each cut at its stop and parsed back by the renderer into text,
// reasoning and tool calls. The OpenAI (chat-completion.ts) and Anthropic (anthropic/messages.ts)
// endpoints shape the same turn into their own answers.
import type { ModelInput, SampledSequence } from '../backends/types.js';
import { RendererError } from '../cookbook/errors.js';
import { loadMessageImages } from '../cookbook/images/messages.js';
import { modelInputLength } from '../cookbook/model-input.js';
import type { Message } from '../cookbook/renderers/types.js';
import { maxTokensFor, sampleFor, samplingParams, type SamplingRequest } from './sampling.js';
import type { ServedModel } from './served-model.js';
import { cutCompletion, samplingStop, splitStops, type CutCompletion } from './stops.js';

export interface TurnRequest extends SamplingRequest {
  /** Already in the renderer's terms (tools declared); images are loaded here. */
  conversation: Message[];
  maxTokens: number | null | undefined;
  /** The request's name for max_tokens, for the context-window error. */
  maxTokensParam: string;
  /** The request's own stop strings (the renderer's are added). */
  stops: string[];
  /** Top alternatives per sampled token (0: none). */
  topLogprobs: number;
  topLogprobsParam: string;
}

export interface SampledCompletion {
  seq: SampledSequence;
  cut: CutCompletion;
  /** What the renderer parsed; the plain text when the renderer refuses the tokens. */
  message: Message;
}

export interface ChatTurn {
  prompt: ModelInput;
  promptTokens: number;
  completions: SampledCompletion[];
  /** Every sampled token, stop tokens included (what usage counts). */
  completionTokens: number;
}

/**
 * `onSampling` runs once the request has passed every check and sampling starts, with the prompt's
 * length: a stream opens there, so a bad request still gets its 4xx status rather than an error
 * inside a 200 stream.
 */
export async function sampleTurn(model: ServedModel, t: TurnRequest, defaultMaxTokens: number, onSampling?: (promptTokens: number) => void): Promise<ChatTurn> {
  const { renderer, tokenizer } = model;
  // Images (data: URLs, local files) are decoded here; a bad one is a 400 naming its part.
  const prompt = renderer.buildGenerationPrompt(await loadMessageImages(t.conversation));
  const promptTokens = modelInputLength(prompt);
  const maxTokens = maxTokensFor(model, promptTokens, t.maxTokens, defaultMaxTokens, t.maxTokensParam);
  const rendererStops = splitStops(renderer.getStopSequences());
  onSampling?.(promptTokens);
  const params = samplingParams(t, maxTokens, samplingStop(rendererStops, t.stops, tokenizer));
  const response = await sampleFor(model, prompt, t.n ?? 1, params, t.topLogprobs, t.topLogprobsParam);

  // What the renderer's parser expects after a response: its own end-of-turn marker.
  const terminator = rendererStops.tokens.length ? [rendererStops.tokens[0]] : tokenizer.encode(rendererStops.strings[0] ?? '', { addSpecialTokens: false });
  const completions = response.sequences.map((seq): SampledCompletion => {
    const cut = cutCompletion(tokenizer, seq, rendererStops.tokens, [...t.stops, ...rendererStops.strings]);
    const body = cut.cutBy !== undefined ? tokenizer.encode(cut.text, { addSpecialTokens: false }) : seq.tokens.slice(0, cut.kept);
    return { seq, cut, message: parseOrText(model, [...body, ...terminator], cut.text) };
  });
  const completionTokens = response.sequences.reduce((s, q) => s + q.tokens.length, 0);
  return { prompt, promptTokens, completions, completionTokens };
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
