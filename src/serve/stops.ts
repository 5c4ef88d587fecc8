// Where a sampled completion ends. The Tinker API stops on token ids or on strings, not both, and
// returns the tokens up to and including whatever stopped it (a stop string may end mid-token). The
// OpenAI API returns the text before the stop, without it. So: the renderer's stop tokens are sent
// as ids unless the request adds stop strings, in which case all of them go as strings (a stop
// token decodes to its own text, which the server matches like any other string), and the text is
// cut here at the first stop.
import type { SampledSequence, SamplingParams } from '../backends/types.js';
import type { Tokenizer } from '../cookbook/tokenizer.js';

export interface RendererStops {
  tokens: number[];
  strings: string[];
}

export function splitStops(stops: string[] | number[]): RendererStops {
  const tokens = stops.filter((s): s is number => typeof s === 'number');
  const strings = stops.filter((s): s is string => typeof s === 'string');
  return { tokens, strings };
}

/** The `stop` to send: the renderer's own stops, plus the request's stop strings when it has any. */
export function samplingStop(renderer: RendererStops, userStops: string[], tokenizer: Tokenizer): SamplingParams['stop'] {
  if (!userStops.length) return renderer.tokens.length ? renderer.tokens : renderer.strings.length ? renderer.strings : undefined;
  const asText = renderer.tokens.map((t) => tokenizer.decode([t]));
  return [...new Set([...userStops, ...renderer.strings, ...asText])];
}

export interface CutCompletion {
  /** The completion's text before its stop (special tokens decoded as text). */
  text: string;
  /** How many sampled tokens lie wholly before the stop (what logprobs describe). */
  kept: number;
  /** Whether the completion ended on its own (a stop token or string) rather than at max_tokens. */
  stopped: boolean;
  /** Which of `cutStrings` ended it, if one did. */
  cutBy: string | undefined;
}

/**
 * Cuts a sampled sequence at its first stop: one of `stopTokens` or `eos` (when the server says it
 * stopped), else the earliest of `cutStrings` in the decoded text.
 */
export function cutCompletion(tokenizer: Tokenizer, seq: SampledSequence, stopTokens: number[], cutStrings: string[]): CutCompletion {
  let body = seq.tokens;
  let stopped = false;
  const at = body.findIndex((t) => stopTokens.includes(t));
  if (at >= 0) {
    body = body.slice(0, at);
    stopped = true;
  } else if (seq.stop_reason === 'stop' && body.length && tokenizer.isSpecialToken(body[body.length - 1])) {
    body = body.slice(0, -1); // an end-of-text token the renderer does not stop on (EOS)
    stopped = true;
  }
  const text = tokenizer.decode(body);
  let cut = -1;
  let cutBy: string | undefined;
  for (const s of cutStrings) {
    const i = text.indexOf(s);
    if (i >= 0 && (cut < 0 || i < cut)) [cut, cutBy] = [i, s];
  }
  if (cut < 0) return { text, kept: body.length, stopped: stopped || seq.stop_reason === 'stop', cutBy };
  return { text: text.slice(0, cut), kept: tokensBefore(tokenizer, body, cut), stopped: true, cutBy };
}

/** The largest k whose first k tokens decode within the first `chars` characters (binary search). */
function tokensBefore(tokenizer: Tokenizer, tokens: number[], chars: number): number {
  let lo = 0;
  let hi = tokens.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (tokenizer.decode(tokens.slice(0, mid)).length <= chars) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
