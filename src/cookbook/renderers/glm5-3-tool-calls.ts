// GLM-5.3 tool plumbing (reference renderers/glm5_3.py): the <arg_key>/<arg_value> tool-call
// format both ways, the <tools> declaration system message, and the template's re-sorting of
// tool responses into tool-call order.

import { RendererError } from '../errors.js';
import { pyTruthy } from './content.js';
import { PyJsonDecodeError, pyJsonDumpValue, pyJsonLoads, type PyJsonValue } from './py-json.js';
import { PY_WS_CLASS, pyStripWs } from './py-whitespace.js';
import type { Message, ToolCall, ToolSpec, UnparsedToolCall } from './types.js';

// Python's `\w` on str: Unicode letters and digits plus '_'.
const NAME_CLASS = String.raw`[\p{L}\p{N}_\-.]`;
const WS = `[${PY_WS_CLASS}]*`;
const TOOL_CALL_RE = new RegExp(
  String.raw`^${WS}<tool_call>${WS}(?<name>${NAME_CLASS}+)${WS}(?<body>[\s\S]*?)${WS}<\/tool_call>${WS}$`,
  'u',
);
const ARG_PAIR_RE = new RegExp(
  String.raw`<arg_key>(?<key>[\s\S]*?)<\/arg_key>${WS}<arg_value>(?<value>[\s\S]*?)<\/arg_value>`,
  'gu',
);

/** String values are written raw, everything else as JSON (template: `v | tojson if v is not string`). */
function formatArgValue(value: PyJsonValue): string {
  return typeof value === 'string' ? value : pyJsonDumpValue(value, { ensureAscii: false });
}

/** `<tool_call>{name}<arg_key>k</arg_key><arg_value>v</arg_value>…</tool_call>`. */
export function formatGlmToolCall(call: ToolCall): string {
  const raw = call.function.arguments;
  let args: PyJsonValue = new Map();
  if (raw) {
    try {
      args = pyJsonLoads(raw);
    } catch (e) {
      const why = (e as Error).message;
      throw new RendererError(`Tool call ${call.function.name} has arguments that are not valid JSON: ${why}`);
    }
  }
  if (!(args instanceof Map)) {
    throw new RendererError(`Tool call ${call.function.name} has arguments that are not a JSON object`);
  }
  let out = `<tool_call>${call.function.name}`;
  for (const [key, value] of args) out += `<arg_key>${key}</arg_key><arg_value>${formatArgValue(value)}</arg_value>`;
  return out + '</tool_call>';
}

/**
 * Parse one raw `<tool_call>…</tool_call>` block. Values are read as JSON when they parse, else
 * kept as raw strings: a string that happens to be valid JSON (`"3"`) comes back typed, as in
 * the reference.
 */
export function parseGlmToolCall(rawText: string): ToolCall | UnparsedToolCall {
  const m = TOOL_CALL_RE.exec(rawText);
  if (!m?.groups) return { raw_text: rawText, error: 'Malformed GLM tool call' };
  const { name, body } = m.groups;
  const args = new Map<string, PyJsonValue>();
  let pos = 0;
  for (const pair of body.matchAll(ARG_PAIR_RE)) {
    const start = pair.index ?? 0;
    if (pyStripWs(body.slice(pos, start))) {
      return { raw_text: rawText, error: 'Unexpected content between tool call arguments' };
    }
    const key = pyStripWs(pair.groups!.key);
    if (!key) return { raw_text: rawText, error: 'Empty tool call argument key' };
    const valueText = pair.groups!.value;
    let value: PyJsonValue;
    try {
      value = pyJsonLoads(valueText);
    } catch (e) {
      if (!(e instanceof PyJsonDecodeError)) throw e;
      value = valueText;
    }
    args.set(key, value);
    pos = start + pair[0].length;
  }
  if (pyStripWs(body.slice(pos))) {
    return { raw_text: rawText, error: 'Unexpected trailing content inside tool call' };
  }
  return { type: 'function', id: null, function: { name, arguments: pyJsonDumpValue(args) } };
}

/**
 * Re-sort one block of consecutive tool responses into the preceding assistant's tool-call
 * order, only when the mapping is unambiguous: unique non-empty call ids, unique non-empty
 * response ids, every response id among the call ids. Otherwise keep the given order.
 */
function sortToolBlock(block: Message[], prev: Message | undefined): Message[] {
  if (prev === undefined || prev.role !== 'assistant') return block;
  const calls = prev.tool_calls;
  if (!calls || calls.length === 0) return block;
  const callIds = calls.map((c) => c.id);
  if (callIds.some((id) => !id) || new Set(callIds).size !== callIds.length) return block;
  const responseIds = block.map((m) => m.tool_call_id);
  if (responseIds.some((id) => !id) || new Set(responseIds).size !== responseIds.length) return block;
  const known = new Set(callIds);
  if (!responseIds.every((id) => known.has(id))) return block;
  const byId = new Map(block.map((m) => [m.tool_call_id, m]));
  return callIds.flatMap((id) => {
    const m = byId.get(id as string);
    return m ? [m] : [];
  });
}

/** A new list with every block of consecutive tool responses re-sorted (see sortToolBlock). */
export function reorderToolResults(messages: readonly Message[]): Message[] {
  const out: Message[] = [];
  let i = 0;
  while (i < messages.length) {
    if (messages[i].role !== 'tool') {
      out.push(messages[i]);
      i++;
      continue;
    }
    let end = i;
    while (end + 1 < messages.length && messages[end + 1].role === 'tool') end++;
    out.push(...sortToolBlock(messages.slice(i, end + 1), i > 0 ? messages[i - 1] : undefined));
    i = end + 1;
  }
  return out;
}

// The leading newline is content: the template writes "<|system|>\n# Tools …".
const TOOLS_SYSTEM_HEAD =
  '\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
  'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n';
const TOOLS_SYSTEM_TAIL =
  '</tools>\n\nFor each function call, output the function name and arguments within the following XML format:\n' +
  '<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key><arg_value>{arg-value-1}</arg_value>' +
  '<arg_key>{arg-key-2}</arg_key><arg_value>{arg-value-2}</arg_value>...</tool_call>';

/**
 * The system messages declaring `tools` (one JSON object per line; tools with a truthy
 * `defer_loading` are skipped, and the `strict`/`defer_loading` keys never written), then the
 * system prompt. The declaration comes first, as in the template.
 */
export function glmConversationPrefixWithTools(tools: ToolSpec[], systemPrompt = ''): Message[] {
  const messages: Message[] = [];
  if (tools.length) {
    const lines = tools
      // A spec may carry keys beyond ToolSpec's (as a dict does): these two are the template's.
      .filter((t) => !pyTruthy((t as Record<string, unknown>).defer_loading))
      .map((t) => {
        const kept = Object.fromEntries(Object.entries(t).filter(([k]) => k !== 'defer_loading' && k !== 'strict'));
        return pyJsonDumpValue(kept, { ensureAscii: false }) + '\n';
      });
    messages.push({ role: 'system', content: TOOLS_SYSTEM_HEAD + lines.join('') + TOOLS_SYSTEM_TAIL });
  }
  if (systemPrompt) messages.push({ role: 'system', content: systemPrompt });
  return messages;
}
