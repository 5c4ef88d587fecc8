// Content helpers shared by renderers (reference renderers/base.py: ensure_text,
// get_text_content, has_thinking, parse_think_blocks, parse_content_blocks,
// detect_unterminated_tool_block, …) and the Python str/truthiness rules they port.

import { RendererError } from '../errors.js';
import { PyFloat, pyJsonDumps } from '../pyjson.js';
import type { Content, ContentPart, Message, ParseTermination, ToolCall, UnparsedToolCall } from './types.js';

export function ensureText(content: Content): string {
  if (typeof content === 'string') return content;
  if (content.length === 1 && content[0].type === 'text') return content[0].text;
  throw new RendererError(`Expected text content, got multimodal content with ${content.length} parts`);
}

/** Concatenated text parts (thinking excluded); a string is returned as-is. */
export function getTextContent(message: Message): string {
  const c = message.content;
  if (typeof c === 'string') return c;
  return c.map((p) => (p.type === 'text' ? p.text : '')).join('');
}

/** Structured content with a thinking part, or a string with an opening `<think>`. */
export function hasThinking(content: Content): boolean {
  if (typeof content === 'string') return content.includes('<think>');
  return content.some((p) => p.type === 'thinking');
}

export function removeThinking(parts: ContentPart[]): ContentPart[] {
  return parts.filter((p) => p.type !== 'thinking');
}

// Python str.strip/lstrip/rstrip with an explicit character set.
export function pyStrip(s: string, chars: string): string {
  return pyRstrip(pyLstrip(s, chars), chars);
}
export function pyLstrip(s: string, chars: string): string {
  let i = 0;
  while (i < s.length && chars.includes(s[i])) i++;
  return s.slice(i);
}
export function pyRstrip(s: string, chars: string): string {
  let j = s.length;
  while (j > 0 && chars.includes(s[j - 1])) j--;
  return s.slice(0, j);
}

/** Python `repr(s)` of a str: quotes chosen as Python does, non-printable characters escaped. */
export function pyStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '\\' || ch === quote) out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u.test(ch)) {
      // Not str.isprintable(): \xhh, \uhhhh or \Uhhhhhhhh, the shortest that fits.
      if (c < 0x100) out += '\\x' + c.toString(16).padStart(2, '0');
      else if (c < 0x10000) out += '\\u' + c.toString(16).padStart(4, '0');
      else out += '\\U' + c.toString(16).padStart(8, '0');
    } else out += ch;
  }
  return out + quote;
}

/**
 * Python truthiness of a JSON-ish value: None, False, 0 (NaN is truthy), and empty strings,
 * lists and objects are false. Ported templates test tool fields this way (`if tool.get(…)`).
 */
export function pyTruthy(v: unknown): boolean {
  if (v === null || v === undefined) return false;
  switch (typeof v) {
    case 'boolean':
      return v;
    case 'number':
      return v !== 0;
    case 'bigint':
      return v !== 0n;
    case 'string':
      return v.length > 0;
    case 'object':
      if (Array.isArray(v)) return v.length > 0;
      if (v instanceof Map) return v.size > 0;
      if (v instanceof PyFloat) return v.value !== 0;
      return Object.keys(v).length > 0;
    default:
      return true;
  }
}

/** Python str.capitalize: first character upper-case, the rest lower-case. */
export function pyCapitalize(s: string): string {
  return s.length === 0 ? s : s[0].toUpperCase() + s.slice(1).toLowerCase();
}

/** `{"name": …, "arguments": <parsed args>}` written with Python json.dumps defaults. */
export function toolCallPayloadJson(call: ToolCall): string {
  // Limitation: JSON.parse cannot keep `1.0` apart from `1`, so a float argument written as an
  // integral literal is re-dumped as an int (Python would keep `1.0`).
  return pyJsonDumps({ name: call.function.name, arguments: JSON.parse(call.function.arguments) });
}

function parseToolCallJson(json: string, rawText: string): ToolCall | UnparsedToolCall {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json.trim());
  } catch (e) {
    return { raw_text: rawText, error: `Invalid JSON: ${(e as Error).message}` };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { raw_text: rawText, error: 'Tool call is not a JSON object' };
  }
  const obj = parsed as Record<string, unknown>;
  if (typeof obj.name !== 'string') return { raw_text: rawText, error: "Missing or invalid 'name' field" };
  const args = obj.arguments;
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return { raw_text: rawText, error: "Missing or invalid 'arguments' field" };
  }
  return {
    type: 'function',
    id: typeof obj.id === 'string' ? obj.id : null,
    function: { name: obj.name, arguments: pyJsonDumps(args) },
  };
}

/**
 * Reference parse_think_blocks: split text on `<think>…</think>` blocks (non-greedy) into
 * thinking and text parts, keeping whitespace exactly so parse → render is the identity;
 * undefined when no `<think>` occurs. Empty blocks and empty text between blocks are dropped.
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

export function isToolCall(x: ToolCall | UnparsedToolCall): x is ToolCall {
  return 'function' in x;
}

/**
 * Split text with `<think>…</think>` and `<tool_call>…</tool_call>` blocks (non-greedy) into
 * content parts and tool calls; undefined when neither opening tag occurs.
 */
export function parseContentBlocks(
  content: string,
): { parts: ContentPart[]; toolCalls: Array<ToolCall | UnparsedToolCall> } | undefined {
  if (!content.includes('<think>') && !content.includes('<tool_call>')) return undefined;
  const parts: ContentPart[] = [];
  const toolCalls: Array<ToolCall | UnparsedToolCall> = [];
  const re = /<think>([\s\S]*?)<\/think>|<tool_call>([\s\S]*?)<\/tool_call>/g;
  let pos = 0;
  for (const m of content.matchAll(re)) {
    const start = m.index ?? 0;
    const before = content.slice(pos, start);
    if (before) parts.push({ type: 'text', text: before });
    if (m[1] !== undefined) {
      if (m[1]) parts.push({ type: 'thinking', thinking: m[1] });
    } else {
      toolCalls.push(parseToolCallJson(m[2] ?? '', m[0]));
    }
    pos = start + m[0].length;
  }
  const rest = content.slice(pos);
  if (rest) parts.push({ type: 'text', text: rest });
  return { parts, toolCalls };
}

export const PARSE_FAILURE_DETAIL_MAX_CHARS = 16384;
export const UNTERMINATED_TOOL_BLOCK_ERROR = 'unterminated tool block';

/** Non-overlapping occurrences of `sub` in `s` (Python `str.count`). */
export function countOccurrences(s: string, sub: string): number {
  let n = 0;
  for (let i = s.indexOf(sub); i !== -1; i = s.indexOf(sub, i + sub.length)) n++;
  return n;
}

export function detectUnterminatedToolBlock(
  content: string,
  openMarker: string,
  closeMarker: string,
): UnparsedToolCall | undefined {
  const opens = countOccurrences(content, openMarker);
  if (opens === 0 || opens <= countOccurrences(content, closeMarker)) return undefined;
  return {
    raw_text: content.slice(content.lastIndexOf(openMarker)).slice(0, PARSE_FAILURE_DETAIL_MAX_CHARS),
    error: `${UNTERMINATED_TOOL_BLOCK_ERROR}: '${openMarker}' opened without a matching '${closeMarker}'`,
  };
}

export type ParseFailureKind = 'structural' | 'content';

export function classifyParseFailure(
  message: Message,
  termination: ParseTermination,
): { kind: ParseFailureKind; detail: string } | undefined {
  if (termination === 'malformed') {
    return {
      kind: 'structural',
      detail:
        `response did not terminate cleanly (termination=${termination}): expected the renderer's stop ` +
        'signal or EOS, so the message framing is broken',
    };
  }
  const unparsed = message.unparsed_tool_calls ?? [];
  if (unparsed.length > 0) {
    return { kind: 'content', detail: unparsed.map((u) => u.error).join('\n').slice(0, PARSE_FAILURE_DETAIL_MAX_CHARS) };
  }
  return undefined;
}
