// gpt-oss renderers (reference renderers/gpt_oss.py): OpenAI's Harmony format,
//   <|start|>{role}<|channel|>{channel}<|message|>{content}<|end|>
// with no newlines between messages. An assistant turn is one block per channel: `analysis`
// (reasoning), `commentary` (tool calls and their preambles), `final` (the answer). The last
// assistant message ends with <|return|>, earlier ones with <|end|>, tool calls with <|call|>.
//
// The `*_reasoning` variants prepend OpenAI's system prompt, which states the reasoning effort
// and the current date. The reference takes that date from the local clock at every render
// (`datetime.now()`, local time zone); so does the default here, and `currentDate` pins it for a
// reproducible prompt.

import { RendererError } from '../errors.js';
import { textChunk } from '../model-input.js';
import type { Tokenizer } from '../tokenizer.js';
import { BaseRenderer, parseResult, warnOnce } from './base.js';
import { ensureText } from './content.js';
import { detectDanglingToolBlock, parseHarmonyOutput } from './harmony-parse.js';
import { formatToolsSection } from './harmony-tools.js';
import type { NamedRendererFactory } from './registry.js';
import {
  type ContentPart,
  type Message,
  type ParseResult,
  type RenderContext,
  type RenderedMessage,
  type ToolCall,
  type ToolSpec,
} from './types.js';

export interface GptOssOptions {
  /** Prepend OpenAI's system prompt (reasoning effort + date); needs `reasoningEffort`. */
  useSystemPrompt?: boolean;
  /** e.g. 'low' | 'medium' | 'high'; set exactly when `useSystemPrompt` is. */
  reasoningEffort?: string;
  /** `YYYY-MM-DD` for the system prompt; default: today in the local time zone, at render time. */
  currentDate?: string;
}

/**
 * The system role rendered verbatim as `system`: a user's `system` message becomes `developer`
 * (as in the Hugging Face template), so the built-in prompt needs a role of its own.
 */
const INTERNAL_SYSTEM_ROLE = '_gptoss_internal_system';

/** Today as `YYYY-MM-DD` in the local time zone (Python `datetime.now().strftime('%Y-%m-%d')`). */
export function localIsoDate(now: Date = new Date()): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(now.getFullYear(), 4)}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

export function gptOssSystemPrompt(currentDate: string, reasoningEffort: string): string {
  return (
    'You are ChatGPT, a large language model trained by OpenAI.\n' +
    'Knowledge cutoff: 2024-06\n' +
    `Current date: ${currentDate}\n\n` +
    `Reasoning: ${reasoningEffort}\n\n` +
    '# Valid channels: analysis, commentary, final. Channel must be included for every message.'
  );
}

/** Each call `to=functions.<name>` in the commentary channel; further calls open new blocks. */
function renderToolCalls(toolCalls: ToolCall[]): string {
  return toolCalls
    .map(
      (tc) =>
        ` to=functions.${tc.function.name}<|channel|>commentary <|constrain|>json<|message|>${tc.function.arguments}<|call|>`,
    )
    .join('<|start|>assistant');
}

function partsOf(message: Message): ContentPart[] {
  return typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
}

export class GptOssRenderer extends BaseRenderer {
  readonly useSystemPrompt: boolean;
  readonly reasoningEffort?: string;
  readonly currentDate?: string;

  constructor(name: string, tokenizer: Tokenizer, opts: GptOssOptions = {}) {
    super(name, tokenizer);
    this.useSystemPrompt = opts.useSystemPrompt ?? false;
    this.reasoningEffort = opts.reasoningEffort;
    this.currentDate = opts.currentDate;
    if (this.useSystemPrompt !== (this.reasoningEffort !== undefined)) {
      throw new RendererError('gpt-oss: reasoning effort must be set if and only if the system prompt is used');
    }
  }

  private get returnToken(): number {
    return this.tokenizer.tokenToId('<|return|>');
  }

  private get callToken(): number {
    return this.tokenizer.tokenToId('<|call|>');
  }

  private encode(text: string): number[] {
    // Harmony markers inside the strings are meant as special tokens (no split_special_tokens).
    return this.tokenizer.encode(text, { addSpecialTokens: false });
  }

  renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    if (message.role === 'tool') return this.renderToolResult(message);

    const role = message.role === INTERNAL_SYSTEM_ROLE ? 'system' : message.role === 'system' ? 'developer' : message.role;
    let output: string;
    if (message.role === 'assistant') {
      output = this.renderAssistantBody(message);
      // Tool calls already end in <|call|>.
      if (!message.tool_calls?.length) output += ctx.isLast ? '<|return|>' : '<|end|>';
    } else if (message.role === 'system') {
      output = `<|message|># Instructions\n\n${ensureText(message.content)}\n\n<|end|>`;
    } else {
      output = `<|message|>${ensureText(message.content)}<|end|>`;
    }
    return { header: textChunk(this.encode(`<|start|>${role}`)), output: [textChunk(this.encode(output))] };
  }

  /** Analysis block for any thinking, then tool calls (text as their preamble) or the final answer. */
  private renderAssistantBody(message: Message): string {
    const parts = partsOf(message);
    const text = parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
    const thinking = parts.map((p) => (p.type === 'thinking' ? p.thinking : '')).join('');
    const toolCalls = message.tool_calls ?? [];
    let out = '';
    if (thinking) out += `<|channel|>analysis<|message|>${thinking}<|end|><|start|>assistant`;
    if (toolCalls.length) {
      if (text) out += `<|channel|>commentary<|message|>${text}<|end|><|start|>assistant`;
      out += renderToolCalls(toolCalls);
    } else {
      out += `<|channel|>final<|message|>${text}`;
    }
    return out;
  }

  /** `<|start|>functions.<name> to=assistant<|channel|>commentary<|message|>{result}<|end|>`. */
  private renderToolResult(message: Message): RenderedMessage {
    let name = message.name ?? '';
    if (!name) {
      // The renderer is stateless: it cannot recover the name from tool_call_id.
      warnOnce(
        'gpt-oss/tool-name',
        `${this.name}: tool message without a "name" field is rendered as functions.unknown; ` +
          'add the called function\'s name to tool messages.',
      );
      name = 'unknown';
    }
    if (!name.startsWith('functions.')) name = `functions.${name}`;
    return {
      header: textChunk(this.encode(`<|start|>${name} to=assistant`)),
      output: [textChunk(this.encode(`<|channel|>commentary<|message|>${ensureText(message.content)}<|end|>`))],
    };
  }

  /**
   * The conversation with OpenAI's system prompt in front, when this variant uses it. As in the
   * reference, the supervised post-pass asks buildGenerationPrompt for the prefix, which prepends
   * it a second time; that no longer matches and the weights stay as they are -- the same
   * weights, since the zeroed prefix never carries loss in this format.
   */
  protected override prepareMessages(messages: Message[]): Message[] {
    if (!this.useSystemPrompt) return messages;
    if (messages.length && messages[0].role === 'system') {
      warnOnce(
        'gpt-oss/double-system',
        `${this.name} prepends its own system prompt, and these messages start with a system message too: ` +
          'the prompt will hold both. Use gpt_oss_no_sysprompt or drop the system message.',
      );
    }
    const content = gptOssSystemPrompt(this.currentDate ?? localIsoDate(), this.reasoningEffort!);
    return [{ role: INTERNAL_SYSTEM_ROLE, content }, ...messages];
  }


  /**
   * Messages to put before a conversation that offers `tools`: a system message routing tool calls
   * to the commentary channel (only with tools) and a developer message with the instructions
   * (`systemPrompt`) and the tools declared TypeScript-style in the `functions` namespace.
   */
  createConversationPrefixWithTools(tools: ToolSpec[], systemPrompt = ''): Message[] {
    const messages: Message[] = [];
    if (tools.length) {
      messages.push({
        role: INTERNAL_SYSTEM_ROLE,
        content: "Calls to these tools must go to the commentary channel: 'functions'.",
      });
    }
    const sections: string[] = [];
    if (systemPrompt) sections.push(`# Instructions\n\n${systemPrompt}`);
    if (tools.length) sections.push(formatToolsSection(tools));
    if (sections.length) messages.push({ role: 'developer', content: sections.join('\n\n') });
    return messages;
  }

  /** Sampling stops at either <|return|> (answer done) or <|call|> (a tool call to run). */
  getStopSequences(): number[] {
    return [this.returnToken, this.callToken];
  }

  parseResponse(tokens: number[]): ParseResult {
    const calls = tokens.filter((t) => t === this.callToken).length;
    const returns = tokens.filter((t) => t === this.returnToken).length;
    if (calls === 0 && returns === 0) {
      return parseResult({ role: 'assistant', content: this.tokenizer.decode(tokens) }, 'malformed');
    }
    for (const [count, token] of [
      [calls, '<|call|>'],
      [returns, '<|return|>'],
    ] as const) {
      if (count > 1) {
        throw new RendererError(
          `When parsing response, expected at most 1 ${token} token, but got ${count}. ` +
            'You probably are using the wrong stop tokens when sampling',
        );
      }
    }
    // The first stop token ends the response.
    const stops = [tokens.indexOf(this.returnToken), tokens.indexOf(this.callToken)].filter((i) => i !== -1);
    const text = this.tokenizer.decode(tokens.slice(0, Math.min(...stops)));

    const { parts, toolCalls, unparsed } = parseHarmonyOutput(text);
    const dangling = detectDanglingToolBlock(text, toolCalls.length + unparsed.length);
    if (dangling) unparsed.push(dangling);
    const message: Message = { role: 'assistant', content: parts.length ? parts : text };
    if (toolCalls.length) message.tool_calls = toolCalls;
    if (unparsed.length) message.unparsed_tool_calls = unparsed;
    return parseResult(message, 'stop_sequence');
  }
}

const withEffort =
  (reasoningEffort: string): NamedRendererFactory =>
  (name, t, opts) =>
    new GptOssRenderer(name, t, { useSystemPrompt: true, reasoningEffort, currentDate: opts?.currentDate });

export const GPT_OSS_RENDERERS: Record<string, NamedRendererFactory> = {
  gpt_oss_no_sysprompt: (name, t) => new GptOssRenderer(name, t),
  gpt_oss_low_reasoning: withEffort('low'),
  gpt_oss_medium_reasoning: withEffort('medium'),
  gpt_oss_high_reasoning: withEffort('high'),
};
