// Token and message completers (spec §2.2, reference tc/completers.py). Sampling seeds come from a
// caller-supplied `seedFor()` so the workflow can derive them from (run seed, step, group, sample)
// and a recovered run samples exactly what the uninterrupted one did (DESIGN §3.2).

import type { ModelInput, SamplingSession } from '../../backends/types.js';
import { modelInputLength } from '../model-input.js';
import type { Message, Renderer } from '../renderers/types.js';
import type { StopCondition, TokensWithLogprobs } from './types.js';

export type TokenCompleter = (
  ob: ModelInput,
  stop: StopCondition,
  opts?: { maxTokens?: number },
) => Promise<TokensWithLogprobs>;

export type MessageCompleter = (messages: Message[]) => Promise<Message>;

export interface TokenCompleterOptions {
  maxTokens: number;
  temperature?: number;
  /** Model context window; caps max tokens at `contextWindow − prompt length`. */
  contextWindow?: number | null;
  /** The sampling seed of each call, in call order. */
  seedFor: () => number;
  /** Ask the server to record what stable_reinforce trains on (the reference's record_stability_info). */
  recordStabilityInfo?: boolean;
}

/**
 * The effective max tokens of one call: the completer's own cap, a smaller per-call override,
 * then the room left in the context window. Throws when the prompt already fills the window.
 */
export function effectiveMaxTokens(
  ownMax: number,
  promptLength: number,
  perCallMax?: number,
  contextWindow?: number | null,
): number {
  let max = perCallMax === undefined ? ownMax : Math.min(ownMax, perCallMax);
  if (contextWindow !== undefined && contextWindow !== null) {
    const room = contextWindow - promptLength;
    if (room <= 0) {
      throw new RangeError(
        `Prompt length ${promptLength} leaves no room in the context window of ${contextWindow} tokens`,
      );
    }
    max = Math.min(max, room);
  }
  return max;
}

export function tinkerTokenCompleter(session: SamplingSession, opts: TokenCompleterOptions): TokenCompleter {
  const temperature = opts.temperature ?? 1;
  return async (ob, stop, callOpts) => {
    const maxTokens = effectiveMaxTokens(opts.maxTokens, modelInputLength(ob), callOpts?.maxTokens, opts.contextWindow);
    const res = await session.sample(ob, 1, { stop, max_tokens: maxTokens, temperature, seed: opts.seedFor() }, opts.recordStabilityInfo ? { recordStabilityInfo: true } : undefined);
    const seq = res.sequences[0];
    if (!seq) throw new Error('sampler returned no sequences');
    const out: TokensWithLogprobs = { tokens: seq.tokens, maybeLogprobs: seq.logprobs ?? null, stopReason: seq.stop_reason };
    // What provenance spans name (SDK 0.38); left off when the sampler gave none.
    if (seq.sequence_id) out.sequenceId = seq.sequence_id;
    // What the turn's prompt cost (token accounting); servers without a prefix cache report none.
    if (res.prompt_cache_hit_tokens) out.promptCacheHitTokens = res.prompt_cache_hit_tokens;
    return out;
  };
}

export interface MessageCompleterOptions {
  maxTokens: number;
  stopCondition?: StopCondition | null;
  temperature?: number;
  seedFor: () => number;
}

/**
 * Render the conversation, sample one completion and parse it into an assistant message (plus
 * tool calls when present). The parse termination is ignored, as in the reference.
 */
export function tinkerMessageCompleter(
  session: SamplingSession,
  renderer: Renderer,
  opts: MessageCompleterOptions,
): MessageCompleter {
  const stop = opts.stopCondition ?? renderer.getStopSequences();
  return async (messages) => {
    const prompt = renderer.buildGenerationPrompt(messages);
    const res = await session.sample(prompt, 1, {
      stop,
      max_tokens: opts.maxTokens,
      temperature: opts.temperature ?? 1,
      seed: opts.seedFor(),
    });
    const seq = res.sequences[0];
    if (!seq) throw new Error('sampler returned no sequences');
    const { message } = renderer.parseResponse(seq.tokens);
    const out: Message = { role: 'assistant', content: message.content };
    if (message.tool_calls && message.tool_calls.length > 0) out.tool_calls = message.tool_calls;
    return out;
  };
}
