// The shared Renderer machinery of reference renderers/base.py (spec §6.1): generation prompts,
// supervised examples with TrainOnWhat weights, the post-pass that withholds loss from what the
// generation prompt supplies, and stop-token parsing.

import type { ModelInput, ModelInputChunk } from '../../backends/types.js';
import { RendererError } from '../errors.js';
import { chunkLength, modelInputToInts, textChunk } from '../model-input.js';
import type { ImageProcessor } from '../images/types.js';
import type { Tokenizer } from '../tokenizer.js';
import { refuseImages, requireRenderableImages } from './image-parts.js';
import {
  TrainOnWhat,
  type Message,
  type ParseResult,
  type ParseTermination,
  type RenderContext,
  type RenderedMessage,
  type Renderer,
  type Role,
  type SupervisedExample,
} from './types.js';

export function parseResult(message: Message, termination: ParseTermination): ParseResult {
  return { message, termination, ok: termination !== 'malformed' };
}

/**
 * Split a response on a single stop token: none → malformed (whole response decoded), one →
 * stop_sequence (tokens before it), more → RendererError (the sampler used the wrong stops).
 */
export function parseResponseForStopToken(tokens: number[], tokenizer: Tokenizer, stopToken: number): ParseResult {
  let count = 0;
  for (const t of tokens) if (t === stopToken) count++;
  if (count === 0) {
    return parseResult({ role: 'assistant', content: tokenizer.decode(tokens) }, 'malformed');
  }
  if (count === 1) {
    const text = tokenizer.decode(tokens.slice(0, tokens.indexOf(stopToken)));
    return parseResult({ role: 'assistant', content: text }, 'stop_sequence');
  }
  throw new RendererError(
    `When parsing response, expected to split into 1 or 2 pieces using stop tokens, but got ${count}. ` +
      'You probably are using the wrong stop tokens when sampling',
  );
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

/** The id of `token`, which the renderer `rendererName` needs to be a single token. */
export function requireSingleToken(tokenizer: Tokenizer, token: string, rendererName: string): number {
  const ids = tokenizer.encode(token, { addSpecialTokens: false });
  if (ids.length !== 1) {
    throw new RendererError(`${rendererName} needs "${token}" as one token in this tokenizer (got ${ids.length} ids)`);
  }
  return ids[0];
}

// Python's warnings.warn shows a message once per call site; once per process and key is close
// enough. Keys are prefixed with the renderer family so families warn independently.
const warnedKeys = new Set<string>();
export function warnOnce(key: string, message: string): void {
  if (warnedKeys.has(key)) return;
  warnedKeys.add(key);
  console.warn(`[cookbook] ${message}`);
}

function lastIndexWhere<T>(xs: readonly T[], pred: (x: T) => boolean): number {
  for (let i = xs.length - 1; i >= 0; i--) if (pred(xs[i])) return i;
  return -1;
}

const lastUserIndex = (messages: readonly Message[]): number => lastIndexWhere(messages, (m) => m.role === 'user');

let warnedExtension = false;

export abstract class BaseRenderer implements Renderer {
  readonly disablesThinking: boolean = false;
  /** Whether image parts are rendered (vision renderers); others refuse them up front. */
  readonly takesImages: boolean = false;
  /** Counts an image's tokens (vision renderers; reference `renderer.image_processor`). */
  imageProcessor?: ImageProcessor;

  constructor(
    readonly name: string,
    readonly tokenizer: Tokenizer,
  ) {}

  get hasExtensionProperty(): boolean {
    return false;
  }

  protected get bosTokens(): number[] {
    return [];
  }

  abstract getStopSequences(): string[] | number[];
  abstract renderMessage(message: Message, ctx: RenderContext): RenderedMessage;
  abstract parseResponse(tokens: number[]): ParseResult;

  /** Images are refused by a text-only renderer and must be loaded and countable by a vision one. */
  private checkImages(messages: readonly Message[]): void {
    if (this.takesImages) requireRenderableImages(messages, this.imageProcessor, this.name);
    else refuseImages(messages, this.name);
  }

  /** Default suffix: the header of an empty message of `role` rendered as the last message. */
  protected generationSuffix(role: Role, ctx: RenderContext): number[] {
    const rendered = this.renderMessage({ role, content: '' }, ctx);
    return rendered.header ? [...rendered.header.tokens] : [];
  }

  /** First message of the produced turn: the one after the last user message. */
  protected lastAssistantTurnStartIndex(messages: readonly Message[]): number {
    return lastUserIndex(messages) + 1;
  }

  /**
   * The conversation as the format renders it, for formats whose template inserts messages of its
   * own (a default or built-in system prompt). Applied on entry to both builders.
   */
  protected prepareMessages(messages: Message[]): Message[] {
    return messages;
  }

  buildGenerationPrompt(inputMessages: Message[], role: Role = 'assistant', prefill?: string): ModelInput {
    this.checkImages(inputMessages);
    const messages = this.prepareMessages(inputMessages);
    const chunks: ModelInputChunk[] = [];
    const bos = this.bosTokens;
    if (bos.length) chunks.push(textChunk(bos));
    const lastUser = lastUserIndex(messages);
    const turnStart = this.lastAssistantTurnStartIndex(messages);
    messages.forEach((message, idx) => {
      const rendered = this.renderMessage(message, {
        idx,
        isLast: idx === messages.length - 1,
        prevMessage: idx > 0 ? messages[idx - 1] : undefined,
        nextMessage: idx + 1 < messages.length ? messages[idx + 1] : undefined,
        lastUserIndex: lastUser,
        inLastAssistantTurn: idx >= turnStart,
      });
      if (rendered.header && rendered.header.tokens.length) chunks.push(rendered.header);
      for (const c of rendered.output) if (chunkLength(c)) chunks.push(c);
    });
    const suffix = this.generationSuffix(role, {
      idx: messages.length,
      isLast: true,
      prevMessage: messages.length ? messages[messages.length - 1] : undefined,
      lastUserIndex: lastUser,
      inLastAssistantTurn: true,
    });
    if (suffix.length) chunks.push(textChunk(suffix));
    if (prefill) chunks.push(textChunk(this.tokenizer.encode(prefill, { addSpecialTokens: false })));
    return { chunks };
  }

  buildSupervisedExample(
    inputMessages: Message[],
    trainOnWhat: TrainOnWhat = TrainOnWhat.LAST_ASSISTANT_MESSAGE,
  ): SupervisedExample {
    this.checkImages(inputMessages);
    const messages = this.prepareMessages(inputMessages);
    if (trainOnWhat === TrainOnWhat.ALL_ASSISTANT_MESSAGES && !this.hasExtensionProperty && !warnedExtension) {
      // The reference logs this on every call; once per process is enough to be seen.
      warnedExtension = true;
      console.warn(
        `[cookbook] train_on_what=all_assistant_messages with renderer "${this.name}", which lacks the ` +
          'extension property: earlier assistant messages see a different prefix than at sampling time.',
      );
    }
    const pieces: Array<{ chunk: ModelInputChunk; weight: number }> = [];
    const bos = this.bosTokens;
    if (bos.length) pieces.push({ chunk: textChunk(bos), weight: 0 });
    const lastUser = lastUserIndex(messages);
    const turnStart = this.lastAssistantTurnStartIndex(messages.slice(0, -1));
    const headerWeight = trainOnWhat === TrainOnWhat.ALL_TOKENS ? 1 : 0;
    messages.forEach((message, idx) => {
      if (trainOnWhat === TrainOnWhat.CUSTOMIZED) {
        if (message.trainable === undefined) {
          throw new RendererError(
            `train_on_what=customized needs a "trainable" field on every message (message ${idx} has none)`,
          );
        }
      } else if (message.trainable !== undefined) {
        throw new RendererError(
          `message ${idx} has a "trainable" field, which only train_on_what=customized uses; ` +
            'change train_on_what to customized or remove the field',
        );
      }
      const isLast = idx === messages.length - 1;
      const ctx: RenderContext = {
        idx,
        isLast,
        prevMessage: idx > 0 ? messages[idx - 1] : undefined,
        nextMessage: idx + 1 < messages.length ? messages[idx + 1] : undefined,
        lastUserIndex: lastUser,
        inLastAssistantTurn: idx >= turnStart,
      };
      const rendered = this.renderMessage(message, ctx);
      if (rendered.header) pieces.push({ chunk: rendered.header, weight: headerWeight });
      const w = this.outputIsTrained(message, ctx, trainOnWhat) ? 1 : 0;
      for (const c of rendered.output) pieces.push({ chunk: c, weight: w });
      if (isLast && rendered.stopOverlap) pieces.push({ chunk: rendered.stopOverlap, weight: w });
    });
    const weights: number[] = [];
    // An image chunk carries one weight per position it occupies, as any other chunk.
    for (const p of pieces) for (let i = 0; i < chunkLength(p.chunk); i++) weights.push(p.weight);
    const modelInput: ModelInput = { chunks: pieces.map((p) => p.chunk) };
    return { modelInput, weights: this.trainAfterTheGenerationPrompt(messages, trainOnWhat, modelInput, weights) };
  }

  /**
   * One example per trained assistant message for renderers without the extension property
   * (each ending at its message, trained with LAST_ASSISTANT_MESSAGE); otherwise one example.
   */
  buildSupervisedExamples(
    messages: Message[],
    trainOnWhat: TrainOnWhat = TrainOnWhat.LAST_ASSISTANT_TURN,
  ): SupervisedExample[] {
    if (this.hasExtensionProperty) return [this.buildSupervisedExample(messages, trainOnWhat)];
    let start: number;
    switch (trainOnWhat) {
      case TrainOnWhat.LAST_ASSISTANT_MESSAGE:
        start = messages.length - 1;
        break;
      case TrainOnWhat.LAST_ASSISTANT_TURN:
        start = this.lastAssistantTurnStartIndex(messages);
        break;
      case TrainOnWhat.ALL_ASSISTANT_MESSAGES:
        start = 0;
        break;
      default:
        throw new RendererError(
          `buildSupervisedExamples cannot split ${trainOnWhat} for a renderer without the extension property`,
        );
    }
    const out: SupervisedExample[] = [];
    for (let idx = Math.max(start, 0); idx < messages.length; idx++) {
      if (messages[idx].role !== 'assistant') continue;
      out.push(this.buildSupervisedExample(messages.slice(0, idx + 1), TrainOnWhat.LAST_ASSISTANT_MESSAGE));
    }
    return out;
  }

  protected outputIsTrained(message: Message, ctx: RenderContext, trainOnWhat: TrainOnWhat): boolean {
    const isAssistant = message.role === 'assistant';
    switch (trainOnWhat) {
      case TrainOnWhat.LAST_ASSISTANT_MESSAGE:
        return ctx.isLast && isAssistant;
      case TrainOnWhat.LAST_ASSISTANT_TURN:
        return isAssistant && ctx.inLastAssistantTurn;
      case TrainOnWhat.ALL_ASSISTANT_MESSAGES:
        return isAssistant;
      case TrainOnWhat.ALL_MESSAGES:
      case TrainOnWhat.ALL_TOKENS:
        return true;
      case TrainOnWhat.ALL_USER_AND_SYSTEM_MESSAGES:
        return message.role === 'user' || message.role === 'system';
      case TrainOnWhat.CUSTOMIZED:
        return message.trainable ?? false;
      default:
        throw new RendererError(`Unknown train_on_what: ${String(trainOnWhat)}`);
    }
  }

  /** Where the generation prompt stops for the "train the produced turn" modes, else undefined. */
  private firstTrainedMessageIndex(messages: readonly Message[], trainOnWhat: TrainOnWhat): number | undefined {
    let boundary: number;
    if (trainOnWhat === TrainOnWhat.LAST_ASSISTANT_MESSAGE) boundary = messages.length - 1;
    else if (trainOnWhat === TrainOnWhat.LAST_ASSISTANT_TURN) boundary = lastUserIndex(messages) + 1;
    else return undefined;
    if (boundary < 0 || boundary >= messages.length) return undefined;
    return messages[boundary].role === 'assistant' ? boundary : undefined;
  }

  /**
   * Zero the weights over whatever `buildGenerationPrompt` would have supplied (e.g. the empty
   * think block of a disable-thinking prompt), so the model is never trained to produce a
   * prefill it is always given. A render that does not start with the prompt is left alone,
   * except by a thinking-disabled renderer, where it means the turn reasoned: refuse it.
   */
  private trainAfterTheGenerationPrompt(
    messages: Message[],
    trainOnWhat: TrainOnWhat,
    modelInput: ModelInput,
    weights: number[],
  ): number[] {
    const boundary = this.firstTrainedMessageIndex(messages, trainOnWhat);
    if (boundary === undefined) return weights;
    if (!modelInput.chunks.every((c) => c.type === 'encoded_text')) return weights;
    const prompt = modelInputToInts(this.buildGenerationPrompt(messages.slice(0, boundary)));
    const tokens = modelInputToInts(modelInput);
    const isPrefix = prompt.length <= tokens.length && prompt.every((t, i) => tokens[i] === t);
    if (!isPrefix) {
      if (this.disablesThinking) {
        throw new RendererError(
          `${this.name} has thinking turned off: its generation prompt closes the think block, which ` +
            'tells the model not to reason. This turn contains reasoning, so training on it would teach ' +
            'the model to reason anyway. Either use the thinking version of this renderer, or remove ' +
            'the reasoning from this turn.',
        );
      }
      return weights;
    }
    return weights.map((w, i) => (i < prompt.length ? 0 : w));
  }
}
