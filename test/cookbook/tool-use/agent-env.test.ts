// The tool-using agent env on Qwen3's real tokenizer: the policy's sampled tokens are parsed by the
// renderer into tool calls, the tools run, their messages are rendered into the next observation,
// and the turn, tool-call and parse-error rules end episodes as the reference's
// AgentToolMessageEnv does. Bad tool calls become tool messages or the parse-error policy's outcome.
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Message, Renderer } from '../../../src/cookbook/renderers/types.js';
import { ParseErrorPolicySchema } from '../../../src/cookbook/rl/rollout-limits.js';
import type { StepResult } from '../../../src/cookbook/rl/types.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';
import { AgentToolMessageEnv, buildAgentToolEnv, simpleToolResult, tool, type RewardFn } from '../../../src/cookbook/tool-use/index.js';

let tok: Tokenizer;
let renderer: Renderer;
let imEnd: number;
beforeAll(async () => {
  tok = await getTokenizer('tiny-qwen3');
  renderer = getRenderer('qwen3', tok);
  imEnd = tok.tokenToId('<|im_end|>');
});

const action = (text: string) => [...tok.encode(text, { addSpecialTokens: false }), imEnd];
const text = (r: StepResult) => tok.decode(modelInputToInts(r.nextObservation));
const callText = (name: string, args: object) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
const think = '<think>\nok\n</think>\n\n';

function calculator() {
  const calls: string[] = [];
  const add = tool({
    name: 'add',
    description: 'Add two integers.',
    parameters: z.object({ a: z.int(), b: z.int() }),
    run: ({ a, b }) => {
      calls.push(`${a}+${b}`);
      return simpleToolResult(String(a + b));
    },
  });
  return { add, calls };
}

const question: Message[] = [{ role: 'user', content: 'What is 2+3?' }];
const rewardOnFive: RewardFn = async (messages) => {
  const last = messages.at(-1)!;
  return [typeof last.content !== 'string' && last.content.some((p) => p.type === 'text' && p.text.includes('5')) ? 1 : 0, { graded: 1 }];
};

describe('AgentToolMessageEnv through the Qwen3 renderer', () => {
  it('the declared tools open the prompt; a call runs, its result is rendered as a tool response; the answer ends and grades the episode', async () => {
    const { add, calls } = calculator();
    const initial = [...(renderer as unknown as { createConversationPrefixWithTools: (t: unknown[]) => Message[] }).createConversationPrefixWithTools([add.toSpec()]), ...question];
    const env = buildAgentToolEnv(renderer, [add], initial, rewardOnFive);
    const ob = await env.initialObservation();
    expect(tok.decode(modelInputToInts((ob as unknown as { ob: never }).ob))).toContain('"name": "add", "description": "Add two integers.", "parameters": {"properties": {"a": {"title": "A", "type": "integer"}');

    const s1 = await env.step(action(think + callText('add', { a: 2, b: 3 })));
    expect(s1).toMatchObject({ reward: 0, episodeDone: false, logs: { tool_call_0: 'add({"a": 2, "b": 3})', tool_result_0: '5' } });
    expect(calls).toEqual(['2+3']);
    expect(text(s1)).toMatch(/<tool_response>\n5\n<\/tool_response><\|im_end\|>\n<\|im_start\|>assistant\n$/);

    const s2 = await env.step(action(`${think}The answer is 5.`));
    expect(s2).toMatchObject({ reward: 1, episodeDone: true, metrics: { 'stop/completed': 1, graded: 1 } });
  });

  it('parallel calls in one turn all run and answer in request order; max_turns ends the episode and still grades', async () => {
    const { add, calls } = calculator();
    const env = buildAgentToolEnv(renderer, [add], question, rewardOnFive, { maxTurns: 1 });
    await env.initialObservation();
    const s = await env.step(action(think + callText('add', { a: 1, b: 1 }) + '\n' + callText('add', { a: 2, b: 2 })));
    expect(calls.sort()).toEqual(['1+1', '2+2']);
    expect(s).toMatchObject({ episodeDone: true, metrics: { max_turns: 1, 'stop/max_turns': 1, graded: 1 }, logs: { tool_result_0: '2', tool_result_1: '4' } });
  });

  it('max_tool_calls: a batch past the budget runs only the allowed prefix and stops with max_tool_calls', async () => {
    const { add, calls } = calculator();
    const env = buildAgentToolEnv(renderer, [add], question, rewardOnFive, { maxToolCalls: 3 });
    await env.initialObservation();
    await env.step(action(think + callText('add', { a: 1, b: 0 }) + '\n' + callText('add', { a: 2, b: 0 })));
    const s = await env.step(action(think + callText('add', { a: 3, b: 0 }) + '\n' + callText('add', { a: 4, b: 0 })));
    expect(calls).toEqual(['1+0', '2+0', '3+0']);
    expect(s).toMatchObject({ episodeDone: true, metrics: { max_tool_calls: 1, 'stop/max_tool_calls': 1 }, logs: { tool_calls_dropped: '1 tool call(s) dropped: max_tool_calls=3 reached' } });
    // The runner's seam: the tighter cap wins.
    const inner = new AgentToolMessageEnv({ tools: [add], initialMessages: question, maxTurns: 5, rewardFn: rewardOnFive, maxToolCalls: 3 });
    inner.setMaxToolCalls(7);
    expect(inner.maxToolCalls).toBe(3);
    inner.setMaxToolCalls(2);
    expect(inner.maxToolCalls).toBe(2);
  });

  it('a tool asking to stop ends the episode with tool_stopped', async () => {
    const submit = tool({ name: 'submit', parameters: z.object({ answer: z.string() }), run: ({ answer }) => simpleToolResult(`submitted ${answer}`, { shouldStop: true }) });
    const env = buildAgentToolEnv(renderer, [submit], question, async () => [0.5, {}]);
    await env.initialObservation();
    expect(await env.step(action(think + callText('submit', { answer: '5' })))).toMatchObject({ episodeDone: true, reward: 0.5, metrics: { tool_stopped: 1, 'stop/tool_stopped': 1 } });
  });
});

describe('bad tool calls in a rollout', () => {
  it('an unknown tool and arguments failing the schema come back as error tool messages; the episode goes on', async () => {
    const { add, calls } = calculator();
    const env = buildAgentToolEnv(renderer, [add], question, rewardOnFive);
    await env.initialObservation();
    const s = await env.step(action(think + callText('multiply', { a: 2, b: 3 }) + '\n' + callText('add', { a: 'two', b: 3 })));
    expect(calls).toEqual([]);
    expect(s.episodeDone).toBe(false);
    expect(s.logs!.tool_result_0).toBe('{"error": "Tool \'multiply\' not found"}');
    expect(String(s.logs!.tool_result_1)).toMatch(/^\{"error": "Parameter validation failed: 1 validation error for add_params\\na\\n/);
    expect(text(s)).toContain('<tool_response>\n{"error": "Tool \'multiply\' not found"}\n</tool_response>');
  });

  it('a tool that throws or times out answers an error message in the conversation', async () => {
    const flaky = tool({ name: 'flaky', parameters: z.object({}), run: () => { throw new Error('backend unavailable'); } });
    const hang = tool({ name: 'hang', parameters: z.object({}), run: () => new Promise(() => {}) });
    const env = buildAgentToolEnv(renderer, [flaky, hang], question, rewardOnFive, { toolTimeoutSeconds: 0.05 });
    await env.initialObservation();
    const s = await env.step(action(think + callText('flaky', {}) + '\n' + callText('hang', {})));
    expect(s.logs).toMatchObject({ tool_result_0: '{"error": "Tool execution failed: backend unavailable"}', tool_result_1: '{"error": "Tool execution failed: timed out after 0.05 s"}' });
    expect(s.episodeDone).toBe(false);
  });

  it('a malformed call with no policy: failed_parse_reward and a parse_error stop, no reward_fn', async () => {
    const { add } = calculator();
    let graded = 0;
    const env = buildAgentToolEnv(renderer, [add], question, async () => [(graded++, 1), {}]);
    await env.initialObservation();
    const s = await env.step(action(`${think}<tool_call>\n{"name": "add", "arguments": {"a": 2,}}\n</tool_call>`));
    expect(s).toMatchObject({ reward: -0.1, episodeDone: true, metrics: { parse_error: 1, 'stop/parse_error': 1 } });
    expect(String(s.logs!.parse_errors)).toMatch(/^Invalid JSON: /);
    expect(graded).toBe(0);
  });

  it('an unterminated tool block is a parse error too', async () => {
    const { add } = calculator();
    const env = buildAgentToolEnv(renderer, [add], question, rewardOnFive);
    await env.initialObservation();
    const s = await env.step(action(`${think}<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}`));
    expect(s).toMatchObject({ reward: -0.1, episodeDone: true, metrics: { 'stop/parse_error': 1 } });
    expect(String(s.logs!.parse_errors)).toMatch(/^unterminated tool block/);
  });

  it('under a ParseErrorPolicy the corrective message is injected until the budget is spent, then the terminal reward', async () => {
    const { add } = calculator();
    const policy = ParseErrorPolicySchema.parse({ max_consecutive: 1, penalty_per_error: 0.2, terminal_reward: -1, mask_error_turns: true });
    const env = buildAgentToolEnv(renderer, [add], question, rewardOnFive, { parseErrorPolicy: policy });
    await env.initialObservation();
    const bad = action(`${think}<tool_call>\nnot json\n</tool_call>`);
    const s1 = await env.step(bad);
    expect(s1).toMatchObject({ reward: -0.2, episodeDone: false, metrics: { parse_error: 1, parse_error_masked: 1 }, logs: { parse_failure_kind: 'content' } });
    expect(text(s1)).toMatch(/<\|im_start\|>user\nThe previous message had a formatting issue.\nError: Invalid JSON: [^\n]*<\|im_end\|>\n<\|im_start\|>assistant\n$/);
    const s2 = await env.step(bad);
    expect(s2).toMatchObject({ reward: -1, episodeDone: true, metrics: { 'stop/parse_error': 1 } });
  });

  it('a mix of valid and malformed calls runs the valid ones and reports the parse error without the failure reward', async () => {
    const { add, calls } = calculator();
    const env = buildAgentToolEnv(renderer, [add], question, rewardOnFive);
    await env.initialObservation();
    const s = await env.step(action(`${think}${callText('add', { a: 2, b: 3 })}\n<tool_call>\n{"arguments": {}}\n</tool_call>`));
    expect(calls).toEqual(['2+3']);
    expect(s).toMatchObject({ reward: 0, episodeDone: false, metrics: { parse_error: 1 }, logs: { parse_errors: "Missing or invalid 'name' field" } });
  });
});
