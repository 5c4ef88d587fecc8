// /v1/completions (the legacy text API): raw prompts, no renderer. Prompts are strings or token id
// lists, one or several; choice i·n + j is prompt i's j-th sample. `echo` returns the prompt before
// the completion, with the prompt tokens' logprobs when logprobs are asked for (what evaluation
// harnesses use to score a continuation: echo, logprobs and max_tokens 0).
import { randomUUID } from 'node:crypto';
import type { SampleOpts } from '../backends/types.js';
import { modelInputFromInts } from '../cookbook/model-input.js';
import type { Usage } from './chat-completion.js';
import { badRequest, unsupported } from './errors.js';
import { completionLogprobs, type CompletionLogprobs } from './logprobs.js';
import { refuseUnsupported, stopStrings, type CompletionRequest } from './requests.js';
import { maxTokensFor, sampleFor, samplingParams } from './sampling.js';
import type { ServedModel } from './served-model.js';
import { cutCompletion } from './stops.js';

/** The legacy API's max_tokens when a request gives none. */
const LEGACY_DEFAULT_MAX_TOKENS = 16;

export interface CompletionChoice {
  index: number;
  text: string;
  logprobs: CompletionLogprobs | null;
  finish_reason: 'stop' | 'length';
}

export interface TextCompletion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: CompletionChoice[];
  usage: Usage;
}

function promptTokenLists(model: ServedModel, prompt: CompletionRequest['prompt']): number[][] {
  const { tokenizer } = model;
  const encode = (s: string) => {
    const ids = tokenizer.encode(s, { addSpecialTokens: false });
    // As a tokenizer adding special tokens would: a model with a BOS token sees one first.
    return tokenizer.bosTokenId !== undefined && ids[0] !== tokenizer.bosTokenId ? [tokenizer.bosTokenId, ...ids] : ids;
  };
  if (typeof prompt === 'string') return [encode(prompt)];
  if (prompt.every((p) => typeof p === 'string')) return (prompt as string[]).map(encode);
  if (prompt.every((p) => typeof p === 'number')) return [prompt as number[]];
  return prompt as number[][];
}

/** `onSampling`: as for completeChat, called once every prompt has passed its checks. */
export async function completeText(model: ServedModel, req: CompletionRequest, onSampling?: () => void): Promise<TextCompletion> {
  refuseUnsupported(req);
  if (req.suffix) throw unsupported('suffix', 'insertion (suffix) is not supported');
  const n = req.n ?? 1;
  if (req.best_of != null && req.best_of !== n) throw unsupported('best_of', 'best_of must equal n (no server-side ranking)');
  const echo = req.echo ?? false;
  if (req.max_tokens === 0 && !echo) throw badRequest('max_tokens must be at least 1 (0 only with echo)', 'max_tokens');
  const { tokenizer } = model;
  const prompts = promptTokenLists(model, req.prompt);
  // (A token id past the model's vocabulary is the backend's to refuse: it knows the model's size.)
  for (const [i, p] of prompts.entries()) if (!p.length) throw badRequest(`prompt ${i} is empty`, 'prompt');
  const userStops = stopStrings(req.stop);
  const top = req.logprobs ?? 0;
  const wantLogprobs = req.logprobs != null;
  // max_tokens 0 (echo only) still samples one token, to get the prompt's logprobs; it is dropped.
  const scoreOnly = req.max_tokens === 0;
  const maxTokens = prompts.map((tokens) => (scoreOnly ? 1 : maxTokensFor(model, tokens.length, req.max_tokens, LEGACY_DEFAULT_MAX_TOKENS, 'max_tokens')));
  onSampling?.();
  const results = await Promise.all(
    prompts.map(async (tokens, i) => {
      const scoring: SampleOpts = echo && wantLogprobs ? { includePromptLogprobs: true, ...(top > 0 ? { topkPromptLogprobs: top } : {}) } : {};
      const params = samplingParams(req, maxTokens[i], userStops.length ? userStops : undefined);
      return { tokens, response: await sampleFor(model, modelInputFromInts(tokens), n, params, top, 'logprobs', scoring) };
    }),
  );
  const choices: CompletionChoice[] = [];
  let completionTokens = 0;
  let promptTokens = 0;
  for (const { tokens, response } of results) {
    promptTokens += tokens.length;
    for (const seq of response.sequences) {
      const cut = scoreOnly ? { text: '', kept: 0, stopped: false } : cutCompletion(tokenizer, seq, [], userStops);
      if (!scoreOnly) completionTokens += seq.tokens.length;
      let logprobs = wantLogprobs ? completionLogprobs(tokenizer, seq, cut.kept, top, model.baseUrl) : null;
      if (logprobs && echo) logprobs = echoLogprobs(model, tokens, response, top, logprobs);
      choices.push({ index: choices.length, text: (echo ? tokenizer.decode(tokens) : '') + cut.text, logprobs, finish_reason: cut.stopped ? 'stop' : 'length' });
    }
  }
  return {
    id: `cmpl-${randomUUID().replaceAll('-', '')}`,
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: model.id,
    choices,
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}

/** The prompt's tokens and logprobs (the first has none) in front of the completion's. */
function echoLogprobs(
  model: ServedModel,
  prompt: number[],
  response: { prompt_logprobs?: Array<number | null> | null; topk_prompt_logprobs?: Array<Array<[number, number]> | null> | null },
  top: number,
  completion: CompletionLogprobs,
): CompletionLogprobs {
  const { tokenizer } = model;
  if (!response.prompt_logprobs || response.prompt_logprobs.length !== prompt.length) {
    throw unsupported('echo', `the sampling backend at ${model.baseUrl} returned no prompt logprobs`);
  }
  const tokens = prompt.map((id) => tokenizer.decode([id]));
  const offsets: number[] = [];
  let offset = 0;
  for (const t of tokens) {
    offsets.push(offset);
    offset += t.length;
  }
  const topRows = top > 0 ? prompt.map((_, i) => (i === 0 ? null : Object.fromEntries((response.topk_prompt_logprobs?.[i] ?? []).slice(0, top).map(([t, lp]) => [tokenizer.decode([t]), lp])))) : null;
  return {
    tokens: [...tokens, ...completion.tokens],
    token_logprobs: [...response.prompt_logprobs, ...completion.token_logprobs],
    top_logprobs: topRows ? [...topRows, ...(completion.top_logprobs ?? [])] : null,
    text_offset: [...offsets, ...completion.text_offset.map((o) => o + offset)],
  };
}
