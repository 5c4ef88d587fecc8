// DeepSeek V3 family renderers (reference renderers/deepseek_v3.py): `deepseekv3` and its alias
// `deepseekv3_disable_thinking` (non-thinking: the assistant header ends in `</think>`), and
// `deepseekv3_thinking` (the generation prompt opens `<think>`).
//
//   <｜begin▁of▁sentence｜>{system}<｜User｜>{question}<｜Assistant｜></think>{answer}<｜end▁of▁sentence｜>
//
// Tool calls follow the answer as `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>name<｜tool▁sep｜>args
// <｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`; a tool result is `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>`
// and the assistant message after it carries no role token.

import type { ModelInput } from '../../backends/types.js';
import { RendererError } from '../errors.js';
import { textChunk } from '../model-input.js';
import { pyJsonDumps } from '../pyjson.js';
import type { Tokenizer } from '../tokenizer.js';
import { BaseRenderer, parseResponseForStopToken, requireSingleToken, singleTokenId } from './base.js';
import { detectUnterminatedToolBlock, ensureText, hasThinking, parseThinkBlocks } from './content.js';
import { pyJsonError } from './py-json.js';
import { PY_WS_CLASS, pyStripWs } from './py-whitespace.js';
import type { NamedRendererFactory } from './registry.js';
import type {
  Message,
  ParseResult,
  RenderContext,
  RenderedMessage,
  Role,
  ToolCall,
  ToolSpec,
  UnparsedToolCall,
} from './types.js';

const CALLS_BEGIN = '<｜tool▁calls▁begin｜>';
const CALLS_END = '<｜tool▁calls▁end｜>';
const CALL_BEGIN = '<｜tool▁call▁begin｜>';
const CALL_END = '<｜tool▁call▁end｜>';
const TOOL_SEP = '<｜tool▁sep｜>';

const CALLS_SECTION_RE = /<｜tool▁calls▁begin｜>([\s\S]*?)<｜tool▁calls▁end｜>/;
// Python's `\w` is Unicode-aware: letters, numbers and the underscore.
const CALL_RE = /<｜tool▁call▁begin｜>([\p{L}\p{N}_]+)<｜tool▁sep｜>([\s\S]*?)<｜tool▁call▁end｜>/gu;
const STRIP_CALLS_RE = new RegExp(`[${PY_WS_CLASS}]*<｜tool▁calls▁begin｜>[\\s\\S]*?<｜tool▁calls▁end｜>`, 'g');

const followsTool = (ctx: RenderContext): boolean => ctx.prevMessage?.role === 'tool';
const isNonEmpty = (content: Message['content']): boolean => content.length > 0;

export interface DeepSeekV3Options {
  /** Render a system message after position 0 as a user turn (the template only has one at 0). */
  systemRoleAsUser?: boolean;
  /** Drop reasoning from history (the template's behaviour); false keeps the extension property. */
  stripThinkingFromHistory?: boolean;
}

abstract class DeepSeekV3BaseRenderer extends BaseRenderer {
  readonly systemRoleAsUser: boolean;
  readonly stripThinkingFromHistory: boolean;

  constructor(name: string, tokenizer: Tokenizer, opts: DeepSeekV3Options = {}) {
    super(name, tokenizer);
    this.systemRoleAsUser = opts.systemRoleAsUser ?? false;
    this.stripThinkingFromHistory = opts.stripThinkingFromHistory ?? true;
  }

  override get hasExtensionProperty(): boolean {
    return !this.stripThinkingFromHistory;
  }

  /** `<｜name｜>`, which must be a single token. */
  protected specialToken(name: string): number {
    return requireSingleToken(this.tokenizer, `<｜${name}｜>`, this.name);
  }

  protected encode(text: string): number[] {
    return this.tokenizer.encode(text, { addSpecialTokens: false });
  }

  protected override get bosTokens(): number[] {
    return [this.specialToken('begin▁of▁sentence')];
  }

  protected get endMessageToken(): number {
    return this.specialToken('end▁of▁sentence');
  }

  getStopSequences(): number[] {
    return [this.endMessageToken];
  }

  renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    let header: number[] = [];
    let text: string;
    const content = message.content;
    switch (message.role) {
      case 'system':
        // The template gathers system text at the very start, with no role token.
        text = ensureText(content);
        if (ctx.idx === 0) break;
        if (!this.systemRoleAsUser) {
          throw new RendererError(
            'DeepSeek only supports system message at start. ' +
              'Use systemRoleAsUser to convert later system messages to user role.',
          );
        }
        header = [this.specialToken('User')];
        break;
      case 'user':
        header = [this.specialToken('User')];
        text = ensureText(content);
        break;
      case 'assistant': {
        const hasToolCalls = (message.tool_calls?.length ?? 0) > 0;
        // A tool-calling turn keeps its reasoning, as does the turn being produced.
        const stripThinking = this.stripThinkingFromHistory && !hasToolCalls && !ctx.isLast;
        if (typeof content === 'string') {
          text = content;
        } else {
          text = content
            .map((p) => {
              if (p.type === 'thinking') return stripThinking ? '' : `<think>${p.thinking}</think>`;
              return p.type === 'text' ? p.text : '';
            })
            .join('');
        }
        // After a tool result the answer flows on with no role token.
        if (!followsTool(ctx)) header = [this.specialToken('Assistant')];
        break;
      }
      case 'tool':
        header = this.encode('<｜tool▁output▁begin｜>');
        text = ensureText(content) + '<｜tool▁output▁end｜>';
        break;
      default:
        throw new RendererError(`Unsupported role: ${message.role}`);
    }

    if (message.tool_calls?.length) {
      text +=
        CALLS_BEGIN +
        message.tool_calls.map((c) => `${CALL_BEGIN}${c.function.name}${TOOL_SEP}${c.function.arguments}${CALL_END}`).join('') +
        CALLS_END;
    }
    const output = this.encode(text);
    // The empty assistant message of a generation prompt has no end token.
    if (message.role === 'assistant' && isNonEmpty(content)) output.push(this.endMessageToken);
    return { ...(header.length ? { header: textChunk(header) } : {}), output: [textChunk(output)] };
  }

  /** Tokens to parse: the thinking renderer puts back the `<think>` its prompt supplied. */
  protected normalizeResponseTokens(tokens: number[]): number[] {
    return tokens;
  }

  parseResponse(tokens: number[]): ParseResult {
    const result = parseResponseForStopToken(this.normalizeResponseTokens(tokens), this.tokenizer, this.endMessageToken);
    if (!result.ok) return result;
    const message = result.message;
    let content = message.content as string;

    const { toolCalls, unparsed } = parseToolCalls(content);
    const dangling =
      detectUnterminatedToolBlock(content, CALLS_BEGIN, CALLS_END) ??
      detectUnterminatedToolBlock(content, CALL_BEGIN, CALL_END);
    if (dangling) unparsed.push(dangling);
    if (toolCalls.length) message.tool_calls = toolCalls;
    if (unparsed.length) message.unparsed_tool_calls = unparsed;
    if (toolCalls.length || unparsed.length) content = pyStripWs(content.replace(STRIP_CALLS_RE, ''));

    message.content = parseThinkBlocks(content) ?? content;
    return result;
  }

  /** A system message describing the tools in DeepSeek V3.1's format (non-thinking mode only). */
  createConversationPrefixWithTools(tools: ToolSpec[], systemPrompt = ''): Message[] {
    let toolsText = '';
    if (tools.length) {
      const blocks = tools.map(
        (t) => `### ${t.name}\nDescription: ${t.description}\n\nParameters: ${pyJsonDumps(t.parameters)}`,
      );
      toolsText =
        '\n\n## Tools\nYou have access to the following tools:\n\n' +
        blocks.join('\n') +
        '\n\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n' +
        `${CALLS_BEGIN}${CALL_BEGIN}tool_call_name${TOOL_SEP}tool_call_arguments${CALL_END}${CALLS_END}\n\n` +
        'Where:\n' +
        '- `tool_call_name` must be an exact match to one of the available tools\n' +
        "- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n" +
        '- For multiple tool calls, chain them directly without separators or spaces';
    }
    return [{ role: 'system', content: systemPrompt + toolsText }];
  }
}

/** Calls inside the first `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>` section. */
function parseToolCalls(content: string): { toolCalls: ToolCall[]; unparsed: UnparsedToolCall[] } {
  const toolCalls: ToolCall[] = [];
  const unparsed: UnparsedToolCall[] = [];
  const section = CALLS_SECTION_RE.exec(content);
  if (!section) return { toolCalls, unparsed };
  for (const m of section[1].matchAll(CALL_RE)) {
    const args = pyStripWs(m[2]);
    const error = pyJsonError(args); // the arguments are kept verbatim, only checked
    if (error === undefined) toolCalls.push({ type: 'function', id: null, function: { name: m[1], arguments: args } });
    else unparsed.push({ raw_text: m[0], error: `Invalid JSON: ${error}` });
  }
  return { toolCalls, unparsed };
}

/**
 * Thinking mode. The generation prompt ends `<｜Assistant｜><think>`; history drops its reasoning
 * and opens with `</think>`; a produced turn without reasoning gets an empty `<think></think>`.
 */
export class DeepSeekV3ThinkingRenderer extends DeepSeekV3BaseRenderer {
  override renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    const rendered = super.renderMessage(message, ctx);
    const isAssistantTurn = message.role === 'assistant' && !followsTool(ctx);
    if (isAssistantTurn && this.stripThinkingFromHistory && !ctx.isLast) {
      // Header, not output: the template says "past the thinking phase" before the answer.
      const header = [...(rendered.header?.tokens ?? []), ...this.encode('</think>')];
      return { ...rendered, header: textChunk(header) };
    }
    // Empty content is the generation prompt's own header, which keeps the open <think>.
    if (isAssistantTurn && ctx.isLast && isNonEmpty(message.content) && !hasThinking(message.content)) {
      const think = this.encode('<think></think>');
      const [first, ...rest] = rendered.output;
      const output =
        first?.type === 'encoded_text' ? [textChunk([...think, ...first.tokens]), ...rest] : [textChunk(think), ...rendered.output];
      return { ...rendered, output };
    }
    return rendered;
  }

  override buildGenerationPrompt(messages: Message[], role: Role = 'assistant', prefill?: string): ModelInput {
    // After a tool result the template stays in non-thinking mode.
    if (messages.length && messages[messages.length - 1].role === 'tool') {
      return super.buildGenerationPrompt(messages, role, prefill);
    }
    return super.buildGenerationPrompt(messages, role, '<think>' + (prefill ?? ''));
  }

  /** The sampled tokens lack the prefilled `<think>`; restore it when the reasoning closes. */
  protected override normalizeResponseTokens(tokens: number[]): number[] {
    const open = singleTokenId(this.tokenizer, '<think>');
    const close = singleTokenId(this.tokenizer, '</think>');
    if (open === undefined || close === undefined) return tokens;
    return tokens[0] !== open && tokens.includes(close) ? [open, ...tokens] : tokens;
  }
}

/** Non-thinking mode: every assistant header ends in `</think>` and reasoning is dropped. */
export class DeepSeekV3DisableThinkingRenderer extends DeepSeekV3BaseRenderer {
  override get hasExtensionProperty(): boolean {
    return true; // no reasoning is ever rendered, so none is stripped from history
  }

  override renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    if (message.role !== 'assistant' || followsTool(ctx)) return super.renderMessage(message, ctx);
    const c = message.content;
    const text =
      typeof c === 'string'
        ? c.replace(/<think>[\s\S]*?<\/think>/g, '')
        : c.map((p) => (p.type === 'text' ? p.text : '')).join('');
    const rendered = super.renderMessage({ ...message, content: text }, ctx);
    // In the header (weight 0), so a training example matches the generation prompt.
    return { ...rendered, header: textChunk([...(rendered.header?.tokens ?? []), ...this.encode('</think>')]) };
  }
}

export const DEEPSEEK_V3_RENDERERS: Record<string, NamedRendererFactory> = {
  // The template's default is non-thinking.
  deepseekv3: (name, t) => new DeepSeekV3DisableThinkingRenderer(name, t),
  deepseekv3_disable_thinking: (name, t) => new DeepSeekV3DisableThinkingRenderer(name, t),
  deepseekv3_thinking: (name, t) => new DeepSeekV3ThinkingRenderer(name, t),
};
