// Qwen3.8 renderers (reference renderers/qwen3_8.py): `qwen3_8_xhigh_reasoning`,
// `qwen3_8_medium_reasoning`, `qwen3_8_low_reasoning` and `qwen3_8_disable_thinking`. Qwen3.5's
// tokenizer and XML tool calls, with three template changes: a reasoning-effort sentence opens
// the system message, thinking is preserved in history by default (every assistant turn keeps a
// think block, empty if it did not reason), and an empty system message renders nothing.

import { RendererError } from '../errors.js';
import { pyJsonDumps } from '../pyjson.js';
import type { Tokenizer } from '../tokenizer.js';
import { pyStripWs } from './py-whitespace.js';
import { Qwen3_5Renderer } from './qwen3-5.js';
import type { Qwen3VLOptions } from './qwen3-vl.js';
import type { NamedRendererFactory } from './registry.js';
import type { Message, RenderContext, Role } from './types.js';

/** The sentence the template puts in the system message per reasoning effort (none for medium). */
export const REASONING_EFFORT_INSTRUCTIONS = {
  xhigh:
    'Reasoning effort is set to xhigh. Please think carefully through the task, validate key assumptions, ' +
    'consider plausible alternatives, and prioritize correctness, consistency, and clarity in the final answer.',
  medium: '',
  low:
    'Reasoning effort is set to low. Keep your thinking brief and focused, moving directly to the conclusion ' +
    'without unnecessary elaboration.',
} as const;
export type ReasoningEffort = keyof typeof REASONING_EFFORT_INSTRUCTIONS;

export interface Qwen3_8Options extends Qwen3VLOptions {
  /** HF's `reasoning_effort` (default xhigh); ignored when thinking is disabled. */
  reasoningEffort?: ReasoningEffort;
}

export class Qwen3_8Renderer extends Qwen3_5Renderer {
  readonly reasoningEffort: ReasoningEffort;

  constructor(name: string, tokenizer: Tokenizer, options: Qwen3_8Options = {}) {
    const effort = options.reasoningEffort ?? 'xhigh';
    if (!Object.hasOwn(REASONING_EFFORT_INSTRUCTIONS, effort)) {
      throw new RendererError(
        `Unexpected reasoning effort ${String(effort)}. Supported types are xhigh (default), medium, and low.`,
      );
    }
    // HF's `preserve_thinking` defaults to true, so history keeps its thinking by default.
    super(name, tokenizer, { ...options, stripThinkingFromHistory: options.stripThinkingFromHistory ?? false });
    this.reasoningEffort = effort;
  }

  /** The instruction sentence for this effort; none when thinking is off. */
  protected get reasoningInstructions(): string {
    return this.disablesThinking ? '' : REASONING_EFFORT_INSTRUCTIONS[this.reasoningEffort];
  }

  /**
   * The template's system-message handling: the instruction goes first in the system message (a
   * new one if there is none), and an empty system message is dropped. Idempotent, because
   * buildSupervisedExample rebuilds the generation prompt from already-normalized messages.
   */
  protected override prepareMessages(messages: Message[]): Message[] {
    const instructions = this.reasoningInstructions;
    if (messages.length && messages[0].role === 'system') {
      const [first, ...rest] = messages;
      let content = first.content;
      if (Array.isArray(content)) {
        const texts = content.flatMap((p) => (p.type === 'text' ? [p.text] : []));
        if (texts.length === content.length) {
          // Text-only parts render like their concatenation (render_content, then |trim).
          content = texts.join('');
        } else {
          // Other parts (which HF's template rejects in a system message): prepend and pass on.
          if (!instructions) return [...messages];
          const head = content[0];
          if (head.type === 'text' && head.text.startsWith(instructions)) return [...messages];
          return [{ ...first, content: [{ type: 'text', text: `${instructions}\n\n` }, ...content] }, ...rest];
        }
      }
      let text = pyStripWs(content);
      if (!text && !instructions) return rest;
      if (instructions && !(text === instructions || text.startsWith(`${instructions}\n\n`))) {
        text = text ? `${instructions}\n\n${text}` : instructions;
      }
      return [{ ...first, content: text }, ...rest];
    }
    if (instructions) {
      const synthetic: Message = { role: 'system', content: instructions };
      // CUSTOMIZED needs `trainable` on every message; the other modes need it nowhere.
      if (messages.some((m) => m.trainable !== undefined)) synthetic.trainable = false;
      return [synthetic, ...messages];
    }
    return [...messages];
  }


  /** Qwen3.8's template writes every non-string value with `|tojson` (`true`, `null`). */
  protected override formatToolCallArgument(value: unknown): string {
    return typeof value === 'string' ? value : pyJsonDumps(value);
  }

  /** With history stripped, only turns at or before the last user message lose their thinking. */
  protected override stripsThinkingFor(message: Message, ctx: RenderContext): boolean {
    return this.stripThinkingFromHistory && message.role === 'assistant' && ctx.idx <= ctx.lastUserIndex;
  }

  /**
   * Every assistant turn that did not reason gets the empty block when thinking is preserved;
   * otherwise the Qwen3.5 positional rule. Only thinking parts count: the template no longer
   * reads an inline `<think>` from string content.
   */
  protected override assistantHeaderSuffix(message: Message, ctx: RenderContext): string {
    if (this.stripThinkingFromHistory && ctx.idx <= ctx.lastUserIndex) return '';
    const reasoned = Array.isArray(message.content) && message.content.some((p) => p.type === 'thinking');
    return reasoned ? '' : '<think>\n\n</think>\n\n';
  }
}

/** Thinking disabled: no effort sentence, and the generation prompt closes an empty block. */
export class Qwen3_8DisableThinkingRenderer extends Qwen3_8Renderer {
  override readonly disablesThinking = true;

  protected override generationSuffixStr(role: Role, ctx: RenderContext): string {
    return `${ctx.idx > 0 ? '\n' : ''}<|im_start|>${role}\n<think>\n\n</think>\n\n`;
  }
}

export const QWEN3_8_RENDERERS: Record<string, NamedRendererFactory> = {
  qwen3_8_xhigh_reasoning: (name, t) => new Qwen3_8Renderer(name, t),
  qwen3_8_medium_reasoning: (name, t) => new Qwen3_8Renderer(name, t, { reasoningEffort: 'medium' }),
  qwen3_8_low_reasoning: (name, t) => new Qwen3_8Renderer(name, t, { reasoningEffort: 'low' }),
  qwen3_8_disable_thinking: (name, t) => new Qwen3_8DisableThinkingRenderer(name, t),
};
