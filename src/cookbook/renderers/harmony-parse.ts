// Parsing sampled Harmony text back into content parts and tool calls (reference
// GptOssRenderer._parse_harmony_messages / _parse_harmony_output / _detect_dangling_tool_block).
// Plain string scanning over the decoded special-token text, as the reference does.

import { countOccurrences, UNTERMINATED_TOOL_BLOCK_ERROR } from './content.js';
import { pyJsonError } from './py-json.js';
import { PY_WS_CLASS, pyStripWs } from './py-whitespace.js';
import type { ContentPart, ToolCall, UnparsedToolCall } from './types.js';

// `\s` in the reference's patterns is Python's whitespace.
const CHANNEL_RE = new RegExp(`<\\|channel\\|>([^<${PY_WS_CLASS}]+)`);
const RECIPIENT_RE = new RegExp(`to=([^${PY_WS_CLASS}<]+)`);

const MESSAGE_TOKEN = '<|message|>';
const START_TOKEN = '<|start|>';
const END_TOKENS = ['<|end|>', '<|call|>', '<|return|>'] as const;

export interface HarmonyMessage {
  channel?: string;
  recipient?: string;
  content: string;
  /** From the header through the end token (or the end of the text when unterminated). */
  rawText: string;
}

/** Python `s.rfind(sub, start, end)`: the last occurrence lying wholly inside [start, end). */
function rfindWithin(s: string, sub: string, start: number, end: number): number {
  const from = end - sub.length;
  if (from < start) return -1;
  const i = s.lastIndexOf(sub, from);
  return i >= start ? i : -1;
}

/**
 * Split text into Harmony messages: each `<|message|>` opens a body that runs to the nearest end
 * token; its header is the text since the last `<|start|>` before it (or since the previous
 * message ended, when the sampled text starts mid-header).
 */
export function parseHarmonyMessages(content: string): HarmonyMessage[] {
  const messages: HarmonyMessage[] = [];
  let idx = 0;
  for (;;) {
    const messageIdx = content.indexOf(MESSAGE_TOKEN, idx);
    if (messageIdx === -1) break;
    let headerStart = rfindWithin(content, START_TOKEN, idx, messageIdx);
    if (headerStart === -1) headerStart = idx;
    const header = content.slice(headerStart, messageIdx);

    const contentStart = messageIdx + MESSAGE_TOKEN.length;
    let endIdx = content.length;
    let endToken = '';
    for (const token of END_TOKENS) {
      const at = content.indexOf(token, contentStart);
      if (at !== -1 && at < endIdx) {
        endIdx = at;
        endToken = token;
      }
    }

    messages.push({
      channel: CHANNEL_RE.exec(header)?.[1],
      recipient: RECIPIENT_RE.exec(header)?.[1],
      content: content.slice(contentStart, endIdx),
      rawText: endToken ? content.slice(headerStart, endIdx + endToken.length) : content.slice(headerStart),
    });
    idx = endIdx + endToken.length;
  }
  return messages;
}

export interface HarmonyOutput {
  parts: ContentPart[];
  toolCalls: ToolCall[];
  unparsed: UnparsedToolCall[];
}

/**
 * Content parts (analysis → thinking, final/commentary → text) and tool calls (messages addressed
 * `to=functions.<name>`, whose body must be JSON). Blank messages are skipped.
 */
export function parseHarmonyOutput(content: string): HarmonyOutput {
  const out: HarmonyOutput = { parts: [], toolCalls: [], unparsed: [] };
  for (const msg of parseHarmonyMessages(content)) {
    const body = msg.content;
    if (!pyStripWs(body)) continue;

    const recipient = msg.recipient;
    if (recipient?.startsWith('functions.')) {
      const name = recipient.slice('functions.'.length);
      const error = pyJsonError(body);
      if (error === undefined) {
        // Harmony carries no tool-call ids.
        out.toolCalls.push({ type: 'function', id: null, function: { name, arguments: pyStripWs(body) } });
      } else {
        out.unparsed.push({ raw_text: msg.rawText, error: `Invalid JSON: ${error}` });
      }
      continue;
    }

    if (msg.channel === 'analysis') out.parts.push({ type: 'thinking', thinking: body });
    else if (msg.channel === 'final' || msg.channel === 'commentary') out.parts.push({ type: 'text', text: body });
  }
  return out;
}


/**
 * A `to=functions.` header that produced neither a tool call nor an unparsed one (its body was
 * empty, or `<|message|>` never came): the tool-call intent would silently become plain text.
 */
export function detectDanglingToolBlock(content: string, parsedCount: number): UnparsedToolCall | undefined {
  if (countOccurrences(content, 'to=functions.') <= parsedCount) return undefined;
  const start = content.lastIndexOf(START_TOKEN);
  return {
    raw_text: start !== -1 ? content.slice(start) : content,
    error: `${UNTERMINATED_TOOL_BLOCK_ERROR}: 'to=functions.' tool-call header without a parsable arguments payload`,
  };
}
