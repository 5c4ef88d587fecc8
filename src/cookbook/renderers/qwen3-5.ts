// Qwen3.5 renderers (reference renderers/qwen3_5.py): `qwen3_5`, `qwen3_5_disable_thinking` and
// `qwen3_5_preserve_thinking`. Qwen3.5 models are VL models with Qwen3-VL's chat format, but:
// content is trimmed, assistant turns after the last user message carry a (possibly empty)
// newline-padded think block, the generation prompt opens `<think>\n`, consecutive tool responses
// share one user block, and tool calls use an XML form
// `<function=name><parameter=p>value</parameter></function>`.

import { RendererError } from '../errors.js';
import { pyFloatRepr, pyJsonDumps } from '../pyjson.js';
import { hasThinking, pyLstrip, pyRstrip, pyStrip, UNTERMINATED_TOOL_BLOCK_ERROR } from './content.js';
import { Qwen3VLRenderer, type VLPart } from './qwen3-vl.js';
import type { NamedRendererFactory } from './registry.js';
import type {
  Content,
  ContentPart,
  Message,
  ParseResult,
  RenderContext,
  RenderedMessage,
  Role,
  ToolCall,
  ToolSpec,
  UnparsedToolCall,
} from './types.js';
import { PY_WHITESPACE, pyStripWs } from './py-whitespace.js';

/** The HF template's `content|trim` over parts: trims the visible text ends, skipping thinking. */
function stripVisibleContent(content: ContentPart[]): ContentPart[] {
  const parts = [...content];
  const visible = parts.flatMap((p, i) => (p.type === 'thinking' ? [] : [i]));
  const passes: Array<[number[], (s: string) => string]> = [
    [visible, (s) => pyLstrip(s, PY_WHITESPACE)],
    [[...visible].reverse(), (s) => pyRstrip(s, PY_WHITESPACE)],
  ];
  for (const [indices, strip] of passes) {
    for (const i of indices) {
      const part = parts[i];
      if (part.type !== 'text') break;
      const stripped = strip(part.text);
      parts[i] = { type: 'text', text: stripped };
      if (stripped) break;
    }
  }
  return parts;
}

// `\s` here is close to Python's: they differ only on U+001C–U+001F, U+0085 and U+FEFF.
const FUNCTION_BLOCK_RE =
  /^\s*<tool_call>\s*<function=(?<name>[^>\n]+)>\s*(?<body>[\s\S]*?)\s*<\/function>\s*<\/tool_call>\s*$/;
const PARAM_BLOCK_RE = /<parameter=(?<name>[^>\n]+)>\s*(?<value>[\s\S]*?)\s*<\/parameter>/g;

/** Python `json.loads` of a parameter value (which also reads NaN/±Infinity); undefined if not JSON. */
function loadJsonValue(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    const special = /^[ \t\n\r]*(NaN|Infinity|-Infinity)[ \t\n\r]*$/.exec(text);
    return special ? { value: Number(special[1]) } : undefined;
  }
}

/** Python `str()` of a JSON scalar (`True`, `None`, `18`, `1.5`). */
function pyStrScalar(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'nan';
    if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
    return Number.isInteger(value) ? pyJsonDumps(value) : pyFloatRepr(value);
  }
  return String(value);
}

/** Parse one `<tool_call>` block written in Qwen3.5's XML form. */
export function parseQwen35ToolCallXml(rawText: string): ToolCall | UnparsedToolCall {
  const match = FUNCTION_BLOCK_RE.exec(rawText);
  if (!match?.groups) return { raw_text: rawText, error: 'Malformed Qwen3.5 tool call XML' };
  const name = pyStripWs(match.groups.name);
  const body = match.groups.body;
  if (!name) return { raw_text: rawText, error: 'Missing function name' };

  const args: Record<string, unknown> = {};
  let pos = 0;
  for (const param of body.matchAll(PARAM_BLOCK_RE)) {
    const start = param.index ?? 0;
    if (pyStripWs(body.slice(pos, start))) {
      return { raw_text: rawText, error: 'Unexpected non-parameter content inside <function> block' };
    }
    const paramName = pyStripWs(param.groups!.name);
    const valueText = pyStrip(param.groups!.value, '\n');
    if (!paramName) return { raw_text: rawText, error: 'Empty parameter name' };
    // A value that is not JSON is taken as a string.
    args[paramName] = (loadJsonValue(valueText) ?? { value: valueText }).value;
    pos = start + param[0].length;
  }
  if (pyStripWs(body.slice(pos))) {
    return { raw_text: rawText, error: 'Unexpected trailing content inside <function> block' };
  }
  return { type: 'function', id: null, function: { name, arguments: pyJsonDumps(args) } };
}

export class Qwen3_5Renderer extends Qwen3VLRenderer {
  protected override readonly groupsConsecutiveToolResponses: boolean = true;

  /**
   * Never claimed: a turn that did not reason is sampled after the prompt's open `<think>\n`, but
   * history writes it with the closed empty block (or none), so the sample is not a token prefix.
   */
  override get hasExtensionProperty(): boolean {
    return false;
  }

  /**
   * Qwen3.5's template declares tools in a format of its own, which is not ported yet; the Qwen3
   * declaration it would inherit is refused rather than rendered wrongly.
   */
  override createConversationPrefixWithTools(_tools: ToolSpec[], _systemPrompt = ''): Message[] {
    throw new RendererError(`${this.name}: declaring tools in the Qwen3.5 format is not supported yet; render without tools`);
  }

  /** The template's `content|trim`. */
  protected trimContent(content: Content): Content {
    return typeof content === 'string' ? pyStripWs(content) : stripVisibleContent(content);
  }

  override renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    return super.renderMessage({ ...message, content: this.trimContent(message.content) }, ctx);
  }

  /** The header the generation prompt ends with, including the `<think>` prefill. */
  protected generationSuffixStr(role: Role, ctx: RenderContext): string {
    return `${ctx.idx > 0 ? '\n' : ''}<|im_start|>${role}\n<think>\n`;
  }

  /** Only the turn being produced is sampled after the prefill, so only its header holds it. */
  protected override generationSuffixInHeader(message: Message, ctx: RenderContext): string {
    if (message.role !== 'assistant' || !ctx.isLast) return '';
    return this.generationSuffixStr(message.role, ctx);
  }

  protected override generationSuffix(role: Role, ctx: RenderContext): number[] {
    return this.tokenizer.encode(this.generationSuffixStr(role, ctx), { addSpecialTokens: false });
  }

  /** An assistant turn after the last user message that did not reason gets an empty block. */
  protected override assistantHeaderSuffix(message: Message, ctx: RenderContext): string {
    if (ctx.idx <= ctx.lastUserIndex) return '';
    return hasThinking(message.content) ? '' : '<think>\n\n</think>\n\n';
  }

  protected override formatThinkingText(thinking: string): string {
    return `<think>\n${thinking}\n</think>\n\n`;
  }

  /** One argument value as the template writes it: `|tojson` for mappings/lists, else `|string`. */
  protected formatToolCallArgument(value: unknown): string {
    // Limitation (as in toolCallPayloadJson): JSON.parse cannot keep `1.0` apart from `1`.
    if (value !== null && typeof value === 'object') return pyJsonDumps(value);
    return pyStrScalar(value);
  }

  protected formatToolCallXml(call: ToolCall): string {
    const args: unknown = call.function.arguments ? JSON.parse(call.function.arguments) : {};
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      throw new RendererError(`tool call ${call.function.name}: arguments must be a JSON object`);
    }
    const lines = [`<tool_call>\n<function=${call.function.name}>`];
    for (const [param, value] of Object.entries(args as Record<string, unknown>)) {
      lines.push(`<parameter=${param}>\n${this.formatToolCallArgument(value)}\n</parameter>`);
    }
    lines.push('</function>\n</tool_call>');
    return lines.join('\n');
  }

  /** XML tool calls, after a blank line only when the message has visible content. */
  protected override formatToolCallsChunks(message: Message): VLPart[] {
    const content = message.content;
    const visible =
      typeof content === 'string'
        ? pyStripWs(content).length > 0
        : content.some((p) => (p.type === 'text' && pyStripWs(p.text)) || p.type === 'image');
    const calls = (message.tool_calls ?? []).map((c) => this.formatToolCallXml(c)).join('\n');
    return [{ type: 'text', text: (visible ? '\n\n' : '') + calls }];
  }

  /** Restore the prefilled `<think>\n` when the sample closes a block it did not open. */
  protected normalizeResponseTokens(tokens: number[]): number[] {
    const prefix = this.tokenizer.encode('<think>\n', { addSpecialTokens: false });
    const close = this.tokenizer.encode('</think>', { addSpecialTokens: false });
    if (close.length !== 1) throw new RendererError(`${this.name}: "</think>" is not a single token`);
    const startsWithThink = tokens.length >= prefix.length && prefix.every((t, i) => tokens[i] === t);
    return !startsWithThink && tokens.includes(close[0]) ? [...prefix, ...tokens] : tokens;
  }

  override parseResponse(tokens: number[]): ParseResult {
    const result = super.parseResponse(this.normalizeResponseTokens(tokens));
    if (result.ok) this.postprocessParsedMessage(result.message);
    return result;
  }

  /**
   * In place: trim thinking (template `|trim`), drop the two separator newlines after
   * `</think>`, and turn XML `<tool_call>` blocks (unparsed by the JSON parser) into calls.
   */
  protected postprocessParsedMessage(message: Message): void {
    const content = message.content;
    if (Array.isArray(content)) {
      let seenThinking = false;
      for (const p of content) {
        if (p.type === 'thinking') {
          p.thinking = pyStripWs(p.thinking);
          seenThinking = true;
        } else if (seenThinking && p.type === 'text') {
          if (p.text.startsWith('\n\n')) p.text = p.text.slice(2);
          break;
        }
      }
    }

    const converted: ToolCall[] = [];
    const remaining: UnparsedToolCall[] = [];
    for (const unparsed of message.unparsed_tool_calls ?? []) {
      // An unterminated block keeps its more informative error.
      if (unparsed.error.startsWith(UNTERMINATED_TOOL_BLOCK_ERROR) || !unparsed.raw_text.includes('<function=')) {
        remaining.push(unparsed);
        continue;
      }
      const parsed = parseQwen35ToolCallXml(unparsed.raw_text);
      if ('function' in parsed) converted.push(parsed);
      else remaining.push(parsed);
    }
    if (converted.length) message.tool_calls = [...(message.tool_calls ?? []), ...converted];
    if (remaining.length) message.unparsed_tool_calls = remaining;
    else delete message.unparsed_tool_calls;
  }
}

/** Thinking disabled: the generation prompt closes an empty think block. */
export class Qwen3_5DisableThinkingRenderer extends Qwen3_5Renderer {
  override readonly disablesThinking = true;

  protected override generationSuffixStr(role: Role, ctx: RenderContext): string {
    return `${ctx.idx > 0 ? '\n' : ''}<|im_start|>${role}\n<think>\n\n</think>\n\n`;
  }
}

export const QWEN3_5_RENDERERS: Record<string, NamedRendererFactory> = {
  qwen3_5: (name, t) => new Qwen3_5Renderer(name, t),
  qwen3_5_disable_thinking: (name, t) => new Qwen3_5DisableThinkingRenderer(name, t),
  qwen3_5_preserve_thinking: (name, t) => new Qwen3_5Renderer(name, t, { stripThinkingFromHistory: false }),
};
