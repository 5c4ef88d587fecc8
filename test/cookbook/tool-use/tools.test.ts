// Tools from typed functions: the JSON schema the renderer declares (pydantic's shape, as the
// reference's @tool gives it), stateful tools sharing state, and every bad input answered by the
// reference's tool message instead of an exception.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolCall } from '../../../src/cookbook/renderers/types.js';
import { errorToolResult, handleToolCall, pyTitle, simpleToolResult, tool, type Tool } from '../../../src/cookbook/tool-use/index.js';

const search = tool({
  name: 'search',
  description: 'Search for information.',
  parameters: z.object({
    query: z.string().describe('Search query'),
    max_results: z.int().default(5).describe('How many'),
    mode: z.enum(['a', 'b']).default('a'),
    tags: z.array(z.string()).nullable().default(null),
  }),
  run: (args) => simpleToolResult(`${args.query}:${args.max_results}:${args.mode}`),
});

const call = (name: string, args: string, id: string | null = 'c1'): ToolCall => ({ type: 'function', id, function: { name, arguments: args } });
const tools = (...ts: Tool[]) => new Map(ts.map((t) => [t.name, t]));
const errorOf = (r: { messages: Array<{ content: unknown }> }) => JSON.parse(r.messages[0].content as string).error as string;

describe('tool schemas', () => {
  it('a zod object declares the same spec as the reference @tool on the equivalent Python signature', () => {
    // tinker-cookbook 0.6.1: @tool async def search(query: Annotated[str, "Search query"],
    //   max_results: Annotated[int, "How many"] = 5, mode: Literal["a","b"] = "a", tags: list[str] | None = None)
    expect(JSON.stringify(search.toSpec())).toBe(
      JSON.stringify({
        name: 'search',
        description: 'Search for information.',
        parameters: {
          properties: {
            query: { description: 'Search query', title: 'Query', type: 'string' },
            max_results: { default: 5, description: 'How many', title: 'Max Results', type: 'integer' },
            mode: { default: 'a', enum: ['a', 'b'], title: 'Mode', type: 'string' },
            tags: { anyOf: [{ items: { type: 'string' }, type: 'array' }, { type: 'null' }], default: null, title: 'Tags' },
          },
          required: ['query'],
          title: 'search_params',
          type: 'object',
        },
      }),
    );
  });

  it('titles follow Python str.title(); a tool without parameters declares an empty object', () => {
    expect(pyTitle('max_results')).toBe('Max Results');
    expect(pyTitle('x2y_id')).toBe('X2Y Id');
    const ping = tool({ name: 'ping', parameters: z.object({}), run: () => simpleToolResult('pong') });
    expect(ping.toSpec()).toEqual({ name: 'ping', description: '', parameters: { properties: {}, title: 'ping_params', type: 'object' } });
  });
});

describe('running tools', () => {
  it('validated arguments with defaults reach the function; call id and name are filled in', async () => {
    const r = await handleToolCall(tools(search), call('search', '{"query": "cats"}'));
    expect(r).toEqual({ messages: [{ role: 'tool', content: 'cats:5:a', tool_call_id: 'c1', name: 'search' }], shouldStop: false, metrics: {}, metadata: {} });
  });

  it('stateful tools built on one object share its state', async () => {
    class Counter {
      count = 0;
      readonly add = tool({ name: 'add', parameters: z.object({ n: z.int() }), run: ({ n }) => simpleToolResult(String((this.count += n))) });
      readonly read = tool({ name: 'read', parameters: z.object({}), run: () => simpleToolResult(String(this.count), { shouldStop: this.count > 5 }) });
    }
    const a = new Counter();
    const b = new Counter();
    const set = tools(a.add, a.read);
    await handleToolCall(set, call('add', '{"n": 4}'));
    await handleToolCall(set, call('add', '{"n": 3}'));
    const r = await handleToolCall(set, call('read', '{}'));
    expect(r.messages[0].content).toBe('7');
    expect(r.shouldStop).toBe(true);
    expect((await handleToolCall(tools(b.read), call('read', '{}'))).messages[0].content).toBe('0');
  });
});

describe('bad input becomes the tool message, never an exception', () => {
  it('an unknown tool', async () => {
    const r = await handleToolCall(tools(search), call('nope', '{}', null));
    expect(r).toEqual(errorToolResult("Tool 'nope' not found", { name: 'nope', errorType: 'tool_not_found' }));
    expect(r.messages[0]).toEqual({ role: 'tool', content: '{"error": "Tool \'nope\' not found"}', tool_call_id: '', name: 'nope' });
  });

  it('arguments that are not JSON', async () => {
    const r = await handleToolCall(tools(search), call('search', '{bad'));
    expect(r.metadata).toEqual({ error: 'json_decode_failed' });
    expect(errorOf(r)).toMatch(/^Failed to parse tool arguments: /);
  });

  it('arguments that fail the schema: missing, wrong type, not an object', async () => {
    for (const [args, field] of [['{}', 'query'], ['{"query": 3}', 'query'], ['{"query": "x", "mode": "z"}', 'mode']] as const) {
      const r = await handleToolCall(tools(search), call('search', args));
      expect(r.metadata).toEqual({ error: 'validation_failed' });
      expect(r.messages[0]).toMatchObject({ role: 'tool', tool_call_id: 'c1', name: 'search' });
      expect(errorOf(r)).toMatch(new RegExp(`^Parameter validation failed: 1 validation error for search_params\\n${field}\\n  `));
    }
    const r = await handleToolCall(tools(search), call('search', '[1, 2]'));
    expect(errorOf(r)).toMatch(/^Parameter validation failed: 1 validation error for search_params\n\(arguments\)\n/);
  });

  it('a tool that throws, or returns something other than a ToolResult', async () => {
    const boom = tool({ name: 'boom', parameters: z.object({}), run: () => { throw new Error('disk on fire'); } });
    const r = await handleToolCall(tools(boom), call('boom', '{}'));
    expect(r.messages[0]).toEqual({ role: 'tool', content: '{"error": "Tool execution failed: disk on fire"}', tool_call_id: 'c1', name: 'boom' });
    expect(r.metadata).toEqual({ error: 'execution_failed' });
    const wrong = tool({ name: 'wrong', parameters: z.object({}), run: () => 'plain string' as never });
    expect(errorOf(await handleToolCall(tools(wrong), call('wrong', '{}')))).toBe(
      "Tool execution failed: Tool function 'wrong' must return ToolResult, got string. Use simpleToolResult() helper for simple cases.",
    );
  });

  it("a tool that runs past its timeout is answered and told to stop through its signal", async () => {
    let aborted: unknown = null;
    const slow = tool({
      name: 'slow',
      parameters: z.object({}),
      timeoutSeconds: 0.05,
      run: (_args, input) =>
        new Promise((resolve) => {
          input.signal!.addEventListener('abort', () => { aborted = input.signal!.reason; resolve(simpleToolResult('too late')); });
        }),
    });
    const started = Date.now();
    const r = await handleToolCall(tools(slow), call('slow', '{}'));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(r.metadata).toEqual({ error: 'timeout' });
    expect(errorOf(r)).toBe('Tool execution failed: timed out after 0.05 s');
    expect(aborted).toBeInstanceOf(Error);
  });

  it('the env-level bound ends a custom tool that ignores its signal', async () => {
    const stubborn: Tool = {
      name: 'stubborn',
      description: '',
      parametersSchema: { type: 'object' },
      run: () => new Promise(() => {}),
      toSpec() { return { name: this.name, description: '', parameters: this.parametersSchema }; },
    };
    const r = await handleToolCall(tools(stubborn), call('stubborn', '{}'), { timeoutSeconds: 0.05 });
    expect(r.metadata).toEqual({ error: 'timeout' });
    expect(errorOf(r)).toBe('Tool execution failed: timed out after 0.05 s');
  });
});
