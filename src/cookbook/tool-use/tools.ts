// Tools from typed functions (reference 0.6.1 tool_use/tools.py `@tool`, FunctionTool,
// handle_tool_call). A zod object schema plays the part of the Python signature: it gives the JSON
// schema the renderer declares and validates the model's arguments before the function runs, after
// the conversions pydantic's lax mode makes (lax.ts: `"2"` for an int, `"yes"` for a bool, ...).
// Stateful tools are tools whose `run` closes over shared state (an object's fields), so several
// tools built on one object share it, as the reference's decorated methods share `self`.
//
// Every failure becomes a tool message, never an exception out of the rollout: an unknown tool,
// arguments that are not JSON or fail the schema, a function that throws, returns something other
// than a ToolResult, or runs past its time. The one exception is a ServiceUnavailableError (a
// service the tool needs is out of reach, e.g. the sandbox server): it fails the rollout, retryably,
// rather than teach the model that its call failed, and nothing is recorded as the call's result.
import { z } from 'zod';
import { ServiceUnavailableError } from '../errors.js';
import { pyJsonError } from '../renderers/py-json.js';
import type { ToolCall, ToolSpec } from '../renderers/types.js';
import { parametersJsonSchema } from './json-schema.js';
import { laxSafeParse } from './lax.js';
import { errorToolResult, isToolResult } from './results.js';
import type { Tool, ToolInput, ToolResult } from './types.js';

export interface ToolDefinition<S extends z.ZodObject> {
  name: string;
  /** What the tool does, shown to the model (the reference takes the docstring). */
  description?: string;
  parameters: S;
  /** Seconds a call may run before it is answered with a timeout error; unset: no bound. */
  timeoutSeconds?: number | null;
  run(args: z.output<S>, input: ToolInput): ToolResult | Promise<ToolResult>;
}

/** Raised into a call's abort signal when its time is up. */
export class ToolTimeoutError extends Error {
  constructor(readonly seconds: number) {
    super(`timed out after ${seconds} s`);
    this.name = 'ToolTimeoutError';
  }
}

/** pydantic-like wording of a failed validation: the count, the model, then each field's problem. */
function validationMessage(modelName: string, error: z.ZodError): string {
  const n = error.issues.length;
  const lines = error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(arguments)'}\n  ${i.message} [code=${i.code}]`);
  return `${n} validation error${n === 1 ? '' : 's'} for ${modelName}\n${lines.join('\n')}`;
}

export class FunctionTool<S extends z.ZodObject = z.ZodObject> implements Tool {
  readonly name: string;
  readonly description: string;
  readonly parametersSchema: Record<string, unknown>;
  readonly timeoutSeconds: number | null;

  constructor(private readonly def: ToolDefinition<S>) {
    this.name = def.name;
    this.description = def.description ?? '';
    this.parametersSchema = parametersJsonSchema(def.name, def.parameters);
    this.timeoutSeconds = def.timeoutSeconds ?? null;
  }

  toSpec(): ToolSpec {
    return { name: this.name, description: this.description, parameters: this.parametersSchema };
  }

  async run(input: ToolInput): Promise<ToolResult> {
    const callId = input.callId ?? '';
    // As the reference's model_validate (lax): what pydantic converts reaches the function converted.
    const validated = laxSafeParse(this.def.parameters, input.arguments);
    if (!validated.success) {
      return errorToolResult(`Parameter validation failed: ${validationMessage(`${this.name}_params`, validated.error)}`, {
        callId,
        name: this.name,
        errorType: 'validation_failed',
      });
    }
    try {
      const result = await runWithin(this.timeoutSeconds, input.signal, (signal) => this.def.run(validated.data, { ...input, signal }));
      if (!isToolResult(result)) {
        const got = result === null ? 'null' : Array.isArray(result) ? 'array' : typeof result;
        throw new TypeError(`Tool function '${this.name}' must return ToolResult, got ${got}. Use simpleToolResult() helper for simple cases.`);
      }
      for (const msg of result.messages) {
        if (!msg.tool_call_id && callId) msg.tool_call_id = callId;
        if (!msg.name) msg.name = this.name;
      }
      return result;
    } catch (e) {
      if (e instanceof ServiceUnavailableError) throw e;
      const timedOut = e instanceof ToolTimeoutError;
      return errorToolResult(`Tool execution failed: ${e instanceof Error ? e.message : String(e)}`, {
        callId,
        name: this.name,
        errorType: timedOut ? 'timeout' : 'execution_failed',
      });
    }
  }
}

/**
 * Runs `work` and rejects with ToolTimeoutError after `seconds`, aborting the signal it was given
 * so the tool can stop what it started; an outer signal (the env's per-call bound) aborts it too.
 */
export async function runWithin<T>(seconds: number | null, outer: AbortSignal | undefined, work: (signal: AbortSignal) => T | Promise<T>): Promise<T> {
  const controller = new AbortController();
  const abort = () => controller.abort(outer?.reason);
  outer?.addEventListener('abort', abort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const bounds: Promise<never>[] = [];
  if (seconds !== null) {
    bounds.push(
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const err = new ToolTimeoutError(seconds);
          controller.abort(err);
          reject(err);
        }, seconds * 1000);
      }),
    );
  }
  if (outer) {
    bounds.push(
      new Promise<never>((_, reject) => {
        const fail = () => reject(outer.reason instanceof Error ? outer.reason : new Error(String(outer.reason)));
        if (outer.aborted) fail();
        else outer.addEventListener('abort', fail, { once: true });
      }),
    );
  }
  try {
    return await Promise.race([Promise.resolve().then(() => work(controller.signal)), ...bounds]);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', abort);
  }
}

/** A tool from a typed function (the reference's `@tool` decorator). */
export function tool<S extends z.ZodObject>(def: ToolDefinition<S>): FunctionTool<S> {
  return new FunctionTool(def);
}

/**
 * Handles one tool call (reference handle_tool_call): an unknown name or arguments that are not
 * JSON answer an error result; otherwise the tool runs, bounded by `timeoutSeconds` when given.
 */
export async function handleToolCall(tools: ReadonlyMap<string, Tool>, toolCall: ToolCall, opts: { timeoutSeconds?: number | null } = {}): Promise<ToolResult> {
  const toolName = toolCall.function.name;
  const callId = toolCall.id ?? '';
  const found = tools.get(toolName);
  if (!found) return errorToolResult(`Tool '${toolName}' not found`, { callId, name: toolName, errorType: 'tool_not_found' });
  let args: unknown;
  try {
    args = JSON.parse(toolCall.function.arguments);
  } catch (e) {
    // Python's json.loads wording (the reference's message), where its decoder refuses the text too.
    const reason = pyJsonError(toolCall.function.arguments) ?? (e as Error).message;
    return errorToolResult(`Failed to parse tool arguments: ${reason}`, { callId, name: toolName, errorType: 'json_decode_failed' });
  }
  const timeoutSeconds = opts.timeoutSeconds ?? null;
  if (timeoutSeconds === null) return found.run({ arguments: args as Record<string, unknown>, callId });
  // The env-level bound: a tool of the user's own that ignores its signal still ends the call.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new ToolTimeoutError(timeoutSeconds)), timeoutSeconds * 1000);
  try {
    return await runWithin(null, controller.signal, (signal) => found.run({ arguments: args as Record<string, unknown>, callId, signal }));
  } catch (e) {
    if (e instanceof ServiceUnavailableError) throw e;
    const timedOut = e instanceof ToolTimeoutError;
    return errorToolResult(`Tool execution failed: ${e instanceof Error ? e.message : String(e)}`, { callId, name: toolName, errorType: timedOut ? 'timeout' : 'execution_failed' });
  } finally {
    clearTimeout(timer);
  }
}
