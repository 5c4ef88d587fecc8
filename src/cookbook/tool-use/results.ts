// The reference's result helpers (tool_use/tools.py simple_tool_result, error_tool_result): one
// tool message, with an error as `{"error": …}` JSON and its category in the metadata.
import { pyJsonDumps } from '../pyjson.js';
import type { Content } from '../renderers/types.js';
import type { ToolResult } from './types.js';

export interface SimpleToolResultOptions {
  callId?: string;
  name?: string;
  shouldStop?: boolean;
  metrics?: Record<string, number>;
  metadata?: Record<string, unknown>;
}

export function simpleToolResult(content: Content, opts: SimpleToolResultOptions = {}): ToolResult {
  return {
    messages: [{ role: 'tool', content, tool_call_id: opts.callId ?? '', name: opts.name ?? '' }],
    shouldStop: opts.shouldStop ?? false,
    metrics: opts.metrics ?? {},
    metadata: opts.metadata ?? {},
  };
}

/** Error categories the library itself produces (tools may use their own). */
export type ToolErrorType = 'tool_not_found' | 'json_decode_failed' | 'validation_failed' | 'execution_failed' | 'timeout' | (string & {});

export interface ErrorToolResultOptions {
  callId?: string;
  name?: string;
  errorType?: ToolErrorType;
  shouldStop?: boolean;
}

export function errorToolResult(errorMsg: string, opts: ErrorToolResultOptions = {}): ToolResult {
  return {
    messages: [{ role: 'tool', content: pyJsonDumps({ error: errorMsg }), tool_call_id: opts.callId ?? '', name: opts.name ?? '' }],
    shouldStop: opts.shouldStop ?? false,
    metrics: {},
    metadata: { error: opts.errorType ?? 'execution_error' },
  };
}

export function isToolResult(x: unknown): x is ToolResult {
  return typeof x === 'object' && x !== null && Array.isArray((x as ToolResult).messages) && typeof (x as ToolResult).shouldStop === 'boolean';
}
