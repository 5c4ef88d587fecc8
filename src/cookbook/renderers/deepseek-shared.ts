// Helpers shared by the DeepSeek renderer families (reference renderers/base.py's
// parse_think_blocks, and Python's notion of whitespace for `str.strip()` and regex `\s`).

import type { Tokenizer } from '../tokenizer.js';
import type { ContentPart } from './types.js';

/** The characters Python's `str.isspace()` (and so `str.strip()` and `re`'s `\s`) accepts. */
export const PY_WHITESPACE =
  '\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000';

/** A regex character class for PY_WHITESPACE (for `\s` in ported patterns). */
export const PY_WHITESPACE_CLASS = `[${[...PY_WHITESPACE].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}]`;

const LEADING_WS = new RegExp(`^${PY_WHITESPACE_CLASS}+`);
const TRAILING_WS = new RegExp(`${PY_WHITESPACE_CLASS}+$`);

/** Python `str.strip()` with no arguments (JS `trim()` disagrees on \x1c-\x1f, \x85 and \ufeff). */
export function pyStripWhitespace(s: string): string {
  return s.replace(LEADING_WS, '').replace(TRAILING_WS, '');
}

/** `not s.strip()` in Python. */
export function isPyBlank(s: string): boolean {
  return pyStripWhitespace(s) === '';
}

/**
 * Split text on `<think>…</think>` blocks (non-greedy) into thinking and text parts, keeping
 * whitespace exactly so parse → render is the identity; undefined when no `<think>` occurs.
 * Empty blocks and empty text between blocks are dropped.
 */
export function parseThinkBlocks(content: string): ContentPart[] | undefined {
  if (!content.includes('<think>')) return undefined;
  const parts: ContentPart[] = [];
  let pos = 0;
  for (const m of content.matchAll(/<think>([\s\S]*?)<\/think>/g)) {
    const start = m.index ?? 0;
    const before = content.slice(pos, start);
    if (before) parts.push({ type: 'text', text: before });
    if (m[1]) parts.push({ type: 'thinking', thinking: m[1] });
    pos = start + m[0].length;
  }
  const rest = content.slice(pos);
  if (rest) parts.push({ type: 'text', text: rest });
  return parts;
}

/**
 * The id of `token` when it is a single token of this tokenizer, else undefined (the reference
 * asks `convert_tokens_to_ids`, which gives None for a string the vocabulary lacks -- e.g.
 * `<think>` in DeepSeek-V3's own tokenizer, which predates reasoning).
 */
export function singleTokenId(tokenizer: Tokenizer, token: string): number | undefined {
  const ids = tokenizer.encode(token, { addSpecialTokens: false });
  return ids.length === 1 ? ids[0] : undefined;
}

/** A tool as the reference's ToolSpec: name, description and a JSON-schema `parameters`. */
export interface DeepSeekToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}
