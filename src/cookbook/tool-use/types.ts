// Core types of the tool-use library (reference 0.6.1 tool_use/types.py): what a tool receives,
// what it answers, and the protocol every tool implements.
import type { Message, ToolSpec } from '../renderers/types.js';

/** Input to a tool invocation. */
export interface ToolInput {
  arguments: Record<string, unknown>;
  callId?: string | null;
  /** Aborted when the call's time is up, so a tool can stop its work (kill a process, cancel a request). */
  signal?: AbortSignal;
}

/** Result of a tool invocation: the messages appended to the conversation, and whether to stop. */
export interface ToolResult {
  messages: Message[];
  shouldStop: boolean;
  metrics: Record<string, number>;
  metadata: Record<string, unknown>;
}

/** A tool an agent can call. */
export interface Tool {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the parameters, as shown to the model. */
  readonly parametersSchema: Record<string, unknown>;
  /** Validates the arguments and runs; answers a ToolResult (errors become error results). */
  run(input: ToolInput): Promise<ToolResult>;
  toSpec(): ToolSpec;
}
