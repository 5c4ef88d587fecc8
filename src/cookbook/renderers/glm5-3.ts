// GLM-5.3 family renderers (reference renderers/glm5_3.py, HF zai-org/GLM-5.3 chat template):
// `glm5_3_max_reasoning` (the template default), `glm5_3_high_reasoning`, `glm5_3_low_reasoning`.
//
//   [gMASK]<sop><|system|>Reasoning Effort: Max<|system|>{system}<|user|>{question}
//   <|assistant|><think>{reasoning}</think>{answer}   (no line breaks in the real format)
//
// There is no end-of-message token: a turn ends with the next role token (<|user|>, or
// <|observation|> after tool calls), which are the model's eos tokens. So each assistant message
// owns its terminator (it carries the message's loss weight) and the following message drops
// that role token from its header; the last assistant message gets it as stop_overlap. Every
// assistant turn opens with `<think>`, which sampling always prefills, so it sits in the
// zero-weight header.

import { RendererError } from '../errors.js';
import { textChunk } from '../model-input.js';
import type { ModelInput } from '../../backends/types.js';
import type { Tokenizer } from '../tokenizer.js';
import { BaseRenderer, parseResult } from './base.js';
import { isToolCall, parseContentBlocks } from './content.js';
import {
  formatGlmToolCall,
  glmConversationPrefixWithTools,
  parseGlmToolCall,
  reorderToolResults,
} from './glm5-3-tool-calls.js';
import { pyStripWs } from './py-whitespace.js';
import type { NamedRendererFactory } from './registry.js';
import {
  TrainOnWhat,
  type Content,
  type Message,
  type ParseResult,
  type ParseTermination,
  type RenderContext,
  type RenderedMessage,
  type Role,
  type SupervisedExample,
  type ToolCall,
  type ToolSpec,
  type UnparsedToolCall,
} from './types.js';

const THINK_PREFILL = '<think>';

export type Glm5_3ReasoningEffort = 'Max' | 'High' | 'Low';

export class Glm5_3Renderer extends BaseRenderer {
  /** Written into the always-present `<|system|>Reasoning Effort: …` segment. */
  readonly reasoningEffort: Glm5_3ReasoningEffort = 'Max';

  private readonly systemToken: number;
  private readonly userToken: number;
  private readonly assistantToken: number;
  private readonly observationToken: number;
  private readonly endOfTextToken: number;
  private readonly thinkOpenToken: number;
  private readonly thinkCloseToken: number;

  /**
   * @param stripThinkingFromHistory false (the template's `clear_thinking=False` default) keeps
   *   reasoning in every assistant message; true writes an empty `<think></think>` for assistant
   *   messages at or before the last user message.
   */
  constructor(
    name: string,
    tokenizer: Tokenizer,
    readonly stripThinkingFromHistory = false,
  ) {
    super(name, tokenizer);
    this.systemToken = this.specialToken('<|system|>');
    this.userToken = this.specialToken('<|user|>');
    this.assistantToken = this.specialToken('<|assistant|>');
    this.observationToken = this.specialToken('<|observation|>');
    this.endOfTextToken = this.specialToken('<|endoftext|>');
    this.thinkOpenToken = this.specialToken('<think>');
    this.thinkCloseToken = this.specialToken('</think>');
  }

  private specialToken(text: string): number {
    const ids = this.encode(text);
    if (ids.length !== 1) {
      throw new RendererError(`${this.name} needs "${text}" as one token in this tokenizer (got ${ids.length} ids)`);
    }
    return ids[0];
  }

  private encode(text: string): number[] {
    return this.tokenizer.encode(text, { addSpecialTokens: false });
  }

  /** Holds while history keeps its reasoning (and assistant text has no surrounding whitespace). */
  override get hasExtensionProperty(): boolean {
    return !this.stripThinkingFromHistory;
  }

  protected override get bosTokens(): number[] {
    return this.encode(`[gMASK]<sop><|system|>Reasoning Effort: ${this.reasoningEffort}`);
  }

  /** `<|user|>`, `<|observation|>`, `<|endoftext|>`: the eos tokens of generation_config.json. */
  getStopSequences(): number[] {
    return [this.userToken, this.observationToken, this.endOfTextToken];
  }

  // The template sorts tool responses into tool-call order; sampling and training must agree.
  override buildGenerationPrompt(messages: Message[], role: Role = 'assistant', prefill?: string): ModelInput {
    return super.buildGenerationPrompt(reorderToolResults(messages), role, prefill);
  }

  override buildSupervisedExample(
    messages: Message[],
    trainOnWhat: TrainOnWhat = TrainOnWhat.LAST_ASSISTANT_MESSAGE,
  ): SupervisedExample {
    return super.buildSupervisedExample(reorderToolResults(messages), trainOnWhat);
  }

  /** Text parts only (the template's visible_text macro). */
  private visibleText(content: Content): string {
    if (typeof content === 'string') return content;
    return content
      .map((p) => {
        if (p.type !== 'text') {
          throw new RendererError(`GLM-5.3 renderer does not support '${p.type}' content parts here`);
        }
        return p.text;
      })
      .join('');
  }

  /** (reasoning, visible text); reasoning is undefined when the message has none. */
  private splitReasoningAndText(message: Message): [string | undefined, string] {
    const content = message.content;
    if (Array.isArray(content)) {
      const reasoning: string[] = [];
      const text: string[] = [];
      for (const p of content) {
        if (p.type === 'thinking') reasoning.push(p.thinking);
        else if (p.type === 'text') text.push(p.text);
        else throw new RendererError(`GLM-5.3 renderer does not support '${p.type}' content parts`);
      }
      return [reasoning.length ? reasoning.join('') : undefined, text.join('')];
    }
    // Split an inline block exactly as the template does.
    if (content.includes('</think>')) {
      const pieces = content.split('</think>');
      const opened = pieces[0].split('<think>');
      return [opened[opened.length - 1], pieces[pieces.length - 1]];
    }
    return [undefined, content];
  }

  /**
   * The token that ends this assistant turn: `<|observation|>` after tool calls, else `<|user|>`.
   * When a message follows, only if that message's role token is this one; a following system
   * message, or a tool response to a turn that called no tools, keeps its own header.
   */
  private turnTerminator(message: Message, next: Message | undefined): number | undefined {
    const expected = message.tool_calls?.length ? this.observationToken : this.userToken;
    if (next === undefined) return expected;
    const nextHeader = next.role === 'user' ? this.userToken : next.role === 'tool' ? this.observationToken : undefined;
    return nextHeader === expected ? expected : undefined;
  }

  /** Whether the previous assistant turn already wrote this message's role token. */
  private headerSuppliedByPreviousTurn(message: Message, ctx: RenderContext): boolean {
    const prev = ctx.prevMessage;
    if (prev === undefined || prev.role !== 'assistant') return false;
    return this.turnTerminator(prev, message) !== undefined;
  }

  renderMessage(message: Message, ctx: RenderContext): RenderedMessage {
    let header: number[];
    let outputText: string;
    const trailing: number[] = [];
    let stopOverlap: number[] | undefined;

    switch (message.role) {
      case 'system':
        header = [this.systemToken];
        outputText = this.visibleText(message.content);
        break;
      case 'user':
        header = this.headerSuppliedByPreviousTurn(message, ctx) ? [] : [this.userToken];
        outputText = this.visibleText(message.content);
        break;
      case 'assistant': {
        const [reasoning, text] = this.splitReasoningAndText(message);
        const keepThinking = !this.stripThinkingFromHistory || ctx.idx > ctx.lastUserIndex;
        const thinkBlock = keepThinking && reasoning !== undefined ? `<think>${reasoning}</think>` : '<think></think>';
        outputText = thinkBlock + pyStripWs(text);
        if (message.tool_calls?.length) outputText += message.tool_calls.map(formatGlmToolCall).join('');
        // Sampling always prefills `<think>`, so it is header (never trained), at every turn.
        header = [this.assistantToken, ...this.encode(THINK_PREFILL)];
        outputText = outputText.slice(THINK_PREFILL.length);
        const terminator = this.turnTerminator(message, ctx.nextMessage);
        if (ctx.isLast) {
          // Nothing follows to carry the terminator; buildSupervisedExample appends it.
          if (terminator !== undefined) stopOverlap = [terminator];
        } else if (terminator !== undefined) {
          trailing.push(terminator);
        }
        break;
      }
      case 'tool': {
        // Consecutive tool responses share one <|observation|>, as does one after the calling turn.
        const followsTool = ctx.prevMessage?.role === 'tool';
        header = followsTool || this.headerSuppliedByPreviousTurn(message, ctx) ? [] : [this.observationToken];
        outputText = `<tool_response>${this.visibleText(message.content)}</tool_response>`;
        break;
      }
      default:
        throw new RendererError(`Unsupported role: ${message.role}`);
    }

    const output = [...this.encode(outputText), ...trailing];
    return {
      header: header.length ? textChunk(header) : undefined,
      output: output.length ? [textChunk(output)] : [],
      stopOverlap: stopOverlap ? textChunk(stopOverlap) : undefined,
    };
  }

  /** The role token; for the assistant followed by the `<think>` the template always opens. */
  protected override generationSuffix(role: Role): number[] {
    const roleTokens: Record<string, number> = {
      system: this.systemToken,
      user: this.userToken,
      assistant: this.assistantToken,
      tool: this.observationToken,
    };
    if (!Object.hasOwn(roleTokens, role)) throw new RendererError(`Unsupported generation role: ${role}`);
    const suffix = [roleTokens[role]];
    if (role === 'assistant') suffix.push(...this.encode(THINK_PREFILL));
    return suffix;
  }

  /** Sampled tokens start after the prefilled `<think>`: put it back when the block closes. */
  private normalizeResponseTokens(tokens: number[]): number[] {
    if (tokens.length && tokens[0] !== this.thinkOpenToken && tokens.includes(this.thinkCloseToken)) {
      return [this.thinkOpenToken, ...tokens];
    }
    return tokens;
  }

  parseResponse(response: number[]): ParseResult {
    const tokens = this.normalizeResponseTokens(response);
    const stops = new Set(this.getStopSequences());
    const stopPositions = tokens.flatMap((t, i) => (stops.has(t) ? [i] : []));
    if (stopPositions.length === 0) {
      return parseResult({ role: 'assistant', content: this.tokenizer.decode(tokens) }, 'malformed');
    }
    if (stopPositions.length > 1) {
      throw new RendererError(
        'When parsing response, expected to split into 1 or 2 pieces using stop tokens, but got ' +
          `${stopPositions.length}. You probably are using the wrong stop tokens when sampling`,
      );
    }
    const stopIndex = stopPositions[0];
    const content = this.tokenizer.decode(tokens.slice(0, stopIndex));
    // <|endoftext|> is the generic EOS; <|user|>/<|observation|> are the expected turn ends.
    const termination: ParseTermination = tokens[stopIndex] === this.endOfTextToken ? 'eos' : 'stop_sequence';
    const message: Message = { role: 'assistant', content };

    const blocks = parseContentBlocks(content);
    if (blocks) {
      message.content = blocks.parts;
      // parseContentBlocks expects JSON payloads, so GLM-format calls arrive unparsed: re-read them.
      const calls: ToolCall[] = blocks.toolCalls.filter(isToolCall);
      const unparsed: UnparsedToolCall[] = [];
      for (const t of blocks.toolCalls) {
        if (isToolCall(t)) continue;
        const parsed = parseGlmToolCall(t.raw_text);
        if (isToolCall(parsed)) calls.push(parsed);
        else unparsed.push(parsed);
      }
      if (calls.length) message.tool_calls = calls;
      if (unparsed.length) message.unparsed_tool_calls = unparsed;
    }
    return parseResult(message, termination);
  }

  /** System messages declaring `tools` (before the system prompt, as in the template). */
  createConversationPrefixWithTools(tools: ToolSpec[], systemPrompt = ''): Message[] {
    return glmConversationPrefixWithTools(tools, systemPrompt);
  }
}

/** `reasoning_effort='high'`. */
export class Glm5_3HighReasoningRenderer extends Glm5_3Renderer {
  override readonly reasoningEffort: Glm5_3ReasoningEffort = 'High';
}

/** `reasoning_effort='low'`: the closest GLM-5.3 has to a non-thinking mode. */
export class Glm5_3LowReasoningRenderer extends Glm5_3Renderer {
  override readonly reasoningEffort: Glm5_3ReasoningEffort = 'Low';
}

export const GLM5_3_RENDERERS: Record<string, NamedRendererFactory> = {
  glm5_3_max_reasoning: (name, t) => new Glm5_3Renderer(name, t),
  glm5_3_high_reasoning: (name, t) => new Glm5_3HighReasoningRenderer(name, t),
  glm5_3_low_reasoning: (name, t) => new Glm5_3LowReasoningRenderer(name, t),
};
