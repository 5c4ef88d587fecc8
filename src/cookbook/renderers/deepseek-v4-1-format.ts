// The text formats of DeepSeek V4.1 (reference renderers/deepseek_v4_1.py, after the
// DeepSeek-V4.1-Flash chat template): the effort line, the tools section, DSML tool calls and
// the reshaping of a cookbook conversation into the template's turns.

import { RendererError } from '../errors.js';
import { pyJsonDumps } from '../pyjson.js';
import { ensureText, pyStrRepr } from './content.js';
import { PyJsonDecodeError, isPyJsonObject, pyJsonDumpValue, pyJsonLoads, type PyJsonValue } from './py-json.js';
import { isPyBlank } from './py-whitespace.js';
import type { Message, ToolCall, ToolSpec, UnparsedToolCall } from './types.js';

export const effortLine = (budget: number): string =>
  `Reasoning Effort: ${budget} (range 1-100, the higher the value, the more thorough the reasoning)\n\n`;

export const CALLS_OPEN = '<｜DSML｜ calls>';
export const CALLS_CLOSE = '</｜DSML｜ calls>';
/** The model writes this only inside tool calls. */
export const DSML_MARKER = '｜DSML｜';

const toolsSection = (schemas: string): string => `## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a "<｜DSML｜ calls>" block like the following:

<｜DSML｜ calls>
<｜DSML｜ invoke name="$TOOL_NAME">
<｜DSML｜ parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</｜DSML｜ parameter>
...
</｜DSML｜ invoke>
<｜DSML｜ invoke name="$TOOL_NAME2">
...
</｜DSML｜ invoke>
</｜DSML｜ calls>

String parameters should be specified as is and set \`string="true"\`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set \`string="false"\`.

If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside <think>...</think> BEFORE any tool calls or final response.

Otherwise, output directly after </think> with tool calls or final response.

### Available Tool Schemas

${schemas}

You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.
`;

/** The tools section for a `tool_declare` message (a JSON list of `{type, function}` entries). */
export function renderToolDeclaration(message: Message): string {
  let declared: PyJsonValue;
  try {
    declared = pyJsonLoads(ensureText(message.content));
  } catch (e) {
    if (e instanceof PyJsonDecodeError) throw new RendererError(`tool_declare content is not JSON: ${e.message}`);
    throw e;
  }
  if (!Array.isArray(declared)) throw new RendererError('tool_declare content must be a JSON list of tools');
  const schemas = declared.map((tool) => {
    const spec = isPyJsonObject(tool) ? tool.get('function') : undefined;
    if (spec === undefined) throw new RendererError('each declared tool needs a "function" entry');
    return pyJsonDumpValue(spec, { ensureAscii: false });
  });
  return toolsSection(schemas.join('\n'));
}

/** The declaration message `create_conversation_prefix_with_tools` makes for these specs. */
export function toolDeclareContent(tools: readonly ToolSpec[]): string {
  return pyJsonDumps(tools.map((tool) => ({ type: 'function', function: { ...tool } })));
}

/**
 * A call's arguments as key/value pairs. encoding.py tolerates double-encoded arguments; an
 * argument string that is not (twice) a JSON object becomes one `arguments` parameter.
 */
export function argumentEntries(args: string): Array<[string, PyJsonValue]> {
  let parsed: PyJsonValue = args;
  for (let i = 0; i < 2 && typeof parsed === 'string'; i++) {
    try {
      parsed = pyJsonLoads(parsed);
    } catch (e) {
      if (!(e instanceof PyJsonDecodeError)) throw e;
      break;
    }
  }
  return isPyJsonObject(parsed) ? [...parsed] : [['arguments', args]];
}

/** The DSML calls block an assistant message ends with (preceded by a blank line). */
export function renderToolCalls(toolCalls: ToolCall[]): string {
  const invokes = toolCalls.map((call) => {
    const params = argumentEntries(call.function.arguments).map(([key, value]) => {
      const isString = typeof value === 'string';
      const text = isString ? value : pyJsonDumpValue(value, { ensureAscii: false });
      return `<｜DSML｜ parameter name="${key}" string="${isString}">${text}</｜DSML｜ parameter>`;
    });
    return `<｜DSML｜ invoke name="${call.function.name}">\n${params.join('\n')}\n</｜DSML｜ invoke>`;
  });
  return `\n\n${CALLS_OPEN}\n${invokes.join('\n')}\n${CALLS_CLOSE}`;
}

export const CALLS_BLOCK_RE = /(?:\n\n)?<｜DSML｜ calls>[\s\S]*?<\/｜DSML｜ calls>/;
const INVOKE_RE = /<｜DSML｜ invoke name="([\s\S]*?)">\n([\s\S]*?)<\/｜DSML｜ invoke>/g;
const PARAM_RE = /<｜DSML｜ parameter name="([\s\S]*?)" string="(true|false)">([\s\S]*?)<\/｜DSML｜ parameter>/g;

const removePrefix = (s: string, p: string): string => (s.startsWith(p) ? s.slice(p.length) : s);
const removeSuffix = (s: string, p: string): string => (p && s.endsWith(p) ? s.slice(0, -p.length) : s);

/** One invoke's arguments as a JSON object string; throws an Error whose message says why not. */
function invokeArguments(name: string, paramsText: string): string {
  if (isPyBlank(name)) throw new Error('empty function name');
  if (!isPyBlank(paramsText.replace(PARAM_RE, ''))) throw new Error('text outside parameters');
  const args = new Map<string, PyJsonValue>();
  for (const [, key, isString, value] of paramsText.matchAll(PARAM_RE)) {
    if (isPyBlank(key)) throw new Error('empty parameter name');
    if (args.has(key)) throw new Error(`duplicate parameter ${pyStrRepr(key)}`);
    args.set(key, isString === 'true' ? value : pyJsonLoads(value));
  }
  return pyJsonDumpValue(args);
}

/** Parse a DSML calls block (as matched by CALLS_BLOCK_RE) into tool calls. */
export function parseToolCallsBlock(block: string): { toolCalls: ToolCall[]; unparsed: UnparsedToolCall[] } {
  const body = removeSuffix(removePrefix(removePrefix(block, '\n\n'), CALLS_OPEN), CALLS_CLOSE);
  const invokes = [...body.matchAll(INVOKE_RE)];
  if (!invokes.length || !isPyBlank(body.replace(INVOKE_RE, ''))) {
    return { toolCalls: [], unparsed: [{ raw_text: block, error: 'Invalid DSML: malformed invoke' }] };
  }
  const toolCalls: ToolCall[] = [];
  const unparsed: UnparsedToolCall[] = [];
  for (const [raw, name, paramsText] of invokes) {
    try {
      toolCalls.push({ type: 'function', id: null, function: { name, arguments: invokeArguments(name, paramsText) } });
    } catch (e) {
      unparsed.push({ raw_text: raw, error: `Invalid DSML: ${(e as Error).message}` });
    }
  }
  return { toolCalls, unparsed };
}

// ------------------------------------------------------------------ conversation shape

/** Tool results and user messages are the user side of the template's turns. */
export const isUserTurn = (m: Message): boolean => m.role === 'user' || m.role === 'tool';

/** (reasoning, answer) of an assistant message; reasoning is '' when there is none. */
export function splitAssistantContent(message: Message): [string, string] {
  const content = message.content;
  if (typeof content === 'string') return ['', content];
  let reasoning = '';
  let text = '';
  for (const part of content) {
    if (part.type === 'thinking') reasoning += part.thinking;
    else if (part.type === 'text') text += part.text;
    else throw new RendererError(`DeepSeek V4.1 renderer does not support '${part.type}' content parts`);
  }
  return [reasoning, text];
}

/**
 * A user turn's messages with its tool results sorted (stably) into tool-call order, each in a
 * slot a tool message held. As encoding.py does, an id no call has sorts as call 0.
 */
function sortToolResults(turn: Message[], callOrder: Map<string, number>): Message[] {
  const rank = (m: Message) => callOrder.get(m.tool_call_id || '') ?? 0;
  const tools = turn.filter((m) => m.role === 'tool').sort((a, b) => rank(a) - rank(b));
  let next = 0;
  return turn.map((m) => (m.role === 'tool' ? tools[next++] : m));
}

/**
 * Reshape a cookbook conversation into the template's turns, keeping every index (so the base
 * class still sees which messages are user turns and which form the last assistant turn).
 *
 * A `tool_declare` message is folded into the leading system message (or becomes one, empty
 * but for the tools). Consecutive tool and user messages share one user turn: the first carries
 * the whole turn's text joined by blank lines, the rest render nothing -- one string, because
 * BPE merges across the `\n\n` would tokenize the pieces differently.
 */
export function normalizeMessages(messages: Message[]): Message[] {
  const result = [...messages];
  for (let idx = 0; idx < result.length; idx++) {
    const message = result[idx];
    if (message.role !== 'tool_declare') continue;
    const tools = renderToolDeclaration(message);
    if (idx === 0) {
      result[0] = { ...message, role: 'system', content: '\n\n' + tools };
    } else if (idx === 1 && result[0].role === 'system') {
      result[0] = { ...result[0], content: `${ensureText(result[0].content)}\n\n${tools}` };
      result[1] = { ...message, content: '' };
    } else {
      throw new RendererError(
        'DeepSeek V4.1 tool declarations must come first or right after the first system message; ' +
          'use createConversationPrefixWithTools',
      );
    }
  }

  let callOrder = new Map<string, number>();
  for (let idx = 0; idx < result.length; ) {
    const calls = result[idx].tool_calls;
    if (calls?.length) {
      callOrder = new Map();
      calls.forEach((c, order) => {
        if (c.id) callOrder.set(c.id, order);
      });
    }
    if (!isUserTurn(result[idx])) {
      idx++;
      continue;
    }
    let end = idx;
    while (end + 1 < result.length && isUserTurn(result[end + 1])) end++;
    const blocks = sortToolResults(result.slice(idx, end + 1), callOrder).map((m) =>
      m.role === 'tool' ? `<tool_result>${ensureText(m.content)}</tool_result>` : ensureText(m.content),
    );
    result[idx] = { ...result[idx], content: blocks.join('\n\n') };
    for (let rest = idx + 1; rest <= end; rest++) result[rest] = { ...result[rest], content: '' };
    idx = end + 1;
  }
  return result;
}

/** The template's last user turn: user and tool messages, and system messages after the first. */
export function lastUserTurnIndex(messages: Message[]): number {
  let last = -1;
  messages.forEach((m, idx) => {
    if (isUserTurn(m) || (m.role === 'system' && idx > 0)) last = idx;
  });
  return last;
}
