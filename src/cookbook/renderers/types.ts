// Message and renderer types, mirroring `tinker_cookbook/renderers/base.py` (spec §6.1).

import type { EncodedTextChunk, ModelInput, ModelInputChunk } from '../../backends/types.js';
import type { DecodedImage, ImageProcessor } from '../images/types.js';

export type Role = 'system' | 'user' | 'assistant' | 'tool' | (string & {});

export interface TextPart {
  type: 'text';
  text: string;
}
export interface ThinkingPart {
  type: 'thinking';
  thinking: string;
}
/**
 * An image in a message (reference `ImagePart`): a local path, a `file://` or `data:` URL, encoded
 * bytes, or the image decoded by `loadMessageImages`, which is what a VL renderer renders.
 */
export interface ImagePart {
  type: 'image';
  image: string | Uint8Array | DecodedImage;
}
export type ContentPart = TextPart | ThinkingPart | ImagePart;
export type Content = string | ContentPart[];

/** OpenAI-style tool call; `arguments` is a JSON string, as in the reference. */
export interface ToolCall {
  type?: 'function';
  id?: string | null;
  function: { name: string; arguments: string };
}

/**
 * A tool the model may call (reference ToolSpec TypedDict, OpenAI function-calling format): its
 * name, what it does, and a JSON-schema `parameters` object. As with the TypedDict, a spec may
 * carry other keys (GLM's template reads `defer_loading` and drops `strict`), and renderers
 * whose reference reads fields with `.get` (gpt-oss, Kimi K2.5) tolerate missing ones.
 */
export type ToolSpec = {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
};

export interface UnparsedToolCall {
  raw_text: string;
  error: string;
}

export interface Message {
  role: Role;
  content: Content;
  tool_calls?: ToolCall[];
  unparsed_tool_calls?: UnparsedToolCall[];
  trainable?: boolean;
  tool_call_id?: string;
  name?: string;
}

export const TrainOnWhat = {
  LAST_ASSISTANT_MESSAGE: 'last_assistant_message',
  LAST_ASSISTANT_TURN: 'last_assistant_turn',
  ALL_ASSISTANT_MESSAGES: 'all_assistant_messages',
  ALL_MESSAGES: 'all_messages',
  ALL_TOKENS: 'all_tokens',
  ALL_USER_AND_SYSTEM_MESSAGES: 'all_user_and_system_messages',
  CUSTOMIZED: 'customized',
} as const;
export type TrainOnWhat = (typeof TrainOnWhat)[keyof typeof TrainOnWhat];
export const TRAIN_ON_WHAT_VALUES = Object.values(TrainOnWhat) as [TrainOnWhat, ...TrainOnWhat[]];

/** How a sampled response ended (reference `ParseTermination`). */
export type ParseTermination = 'stop_sequence' | 'eos' | 'malformed';

export interface ParseResult {
  message: Message;
  termination: ParseTermination;
  /** `termination.is_clean`: anything but 'malformed'. */
  ok: boolean;
}

export interface RenderContext {
  idx: number;
  isLast: boolean;
  prevMessage?: Message;
  nextMessage?: Message;
  /** Index of the last user message in the conversation, −1 if none. */
  lastUserIndex: number;
  inLastAssistantTurn: boolean;
}

export interface RenderedMessage {
  /** Text chunks, and an image chunk per image part (VL renderers). */
  output: ModelInputChunk[];
  header?: EncodedTextChunk;
  stopOverlap?: EncodedTextChunk;
}

export interface SupervisedExample {
  modelInput: ModelInput;
  /** One weight per token of `modelInput`. */
  weights: number[];
}

export interface Renderer {
  readonly name: string;
  readonly hasExtensionProperty: boolean;
  readonly disablesThinking: boolean;
  /** Whether image parts are rendered; a text-only renderer refuses them, naming the part. */
  readonly takesImages: boolean;
  /** What counts an image's tokens (vision renderers). */
  imageProcessor?: ImageProcessor;
  getStopSequences(): string[] | number[];
  renderMessage(message: Message, ctx: RenderContext): RenderedMessage;
  buildGenerationPrompt(messages: Message[], role?: Role, prefill?: string): ModelInput;
  buildSupervisedExample(messages: Message[], trainOnWhat?: TrainOnWhat): SupervisedExample;
  /** One example per trained assistant message when the renderer lacks the extension property. */
  buildSupervisedExamples(messages: Message[], trainOnWhat?: TrainOnWhat): SupervisedExample[];
  parseResponse(tokens: number[]): ParseResult;
}
