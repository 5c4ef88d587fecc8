// The agent env parses tool calls with the model family's own renderer: the assistant turn a model
// of the family would write (rendered by the same renderer, as a supervised example's trained
// tokens) comes back as tool calls, the tool runs, and its result is rendered in the family's
// format. Families whose tokenizers ship with the project: Qwen3, Qwen3.5's XML calls, gpt-oss's harmony;
// the others on stand-in tokenizers below.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Message, Renderer } from '../../../src/cookbook/renderers/types.js';
import { ParseErrorPolicySchema } from '../../../src/cookbook/rl/rollout-limits.js';
import type { StepResult } from '../../../src/cookbook/rl/types.js';
import { getTokenizer } from '../../../src/cookbook/tokenizer.js';
import { buildAgentToolEnv, simpleToolResult, tool } from '../../../src/cookbook/tool-use/index.js';
import { FAMILIES, familySetup } from './family-scenarios.js';

/** The tokens a model writes for `assistant` after `before` (the trained part of a supervised example). */
function sampledTokens(renderer: Renderer, before: Message[], assistant: Message): number[] {
  const { modelInput, weights } = renderer.buildSupervisedExample([...before, assistant], 'last_assistant_message');
  const tokens = modelInputToInts(modelInput);
  return tokens.filter((_, i) => weights[i] > 0);
}

const CASES = [
  { renderer: 'qwen3', model: 'Qwen/Qwen3-8B', response: '<tool_response>\n' },
  { renderer: 'qwen3_5', model: 'Qwen/Qwen3-8B', response: '<tool_response>\n' },
  { renderer: 'gpt_oss_medium_reasoning', model: 'openai/gpt-oss-20b', response: '<|start|>functions.lookup to=assistant<|channel|>commentary<|message|>' },
] as const;

describe.each(CASES)('tool calls through the $renderer renderer', ({ renderer: name, model, response }) => {
  it('a call the family writes is parsed, dispatched, and its result rendered back', async () => {
    const tokenizer = await getTokenizer(model);
    const renderer = getRenderer(name, tokenizer, { currentDate: '2026-01-01' });
    const seen: string[] = [];
    const lookup = tool({
      name: 'lookup',
      description: 'Look a word up.',
      parameters: z.object({ word: z.string(), limit: z.int().default(1) }),
      run: ({ word, limit }) => {
        seen.push(`${word}/${limit}`);
        return simpleToolResult(`${word}: a small feline`);
      },
    });
    const initial: Message[] = [{ role: 'user', content: 'Define cat.' }];
    const env = buildAgentToolEnv(renderer, [lookup], initial, async () => [1, {}]);
    await env.initialObservation();
    const assistant: Message = { role: 'assistant', content: '', tool_calls: [{ type: 'function', id: 'call_1', function: { name: 'lookup', arguments: '{"word": "cat", "limit": 2}' } }] };
    const step = await env.step(sampledTokens(renderer, initial, assistant));
    expect(seen).toEqual(['cat/2']);
    expect(step.episodeDone).toBe(false);
    expect(step.logs).toMatchObject({ tool_call_0: 'lookup({"word": "cat", "limit": 2})', tool_result_0: 'cat: a small feline' });
    const next = tokenizer.decode(modelInputToInts(step.nextObservation));
    expect(next).toContain(response);
    expect(next).toContain('cat: a small feline');
  });
});

// The families whose tokenizers do not ship (Kimi K2/K2.5, DeepSeek V3/V4.1, GLM 5.3, Nemotron 3),
// on the renderer parity tests' stand-in tokenizers, through every way a call can go: the policy's
// tokens come from family-scenarios.ts; test/parity/agent-env-families.parity.test.ts steps the
// reference's env with the same tokens and finds the same results.
describe.each(FAMILIES.map((f) => [f.family, f] as const))('the agent env on %s tool calls', (_name, f) => {
  const lookupTool = (seen: string[]) =>
    tool({
      name: 'lookup',
      description: 'Look a word up.',
      parameters: z.object({ word: z.string().describe('The word to look up'), limit: z.int().default(1) }),
      run: ({ word, limit }) => {
        seen.push(`${word}/${limit}`);
        return simpleToolResult(`${word}: a small feline (${limit})`);
      },
    });
  // The family's tokenizer, renderer and scenario tokens, built once for its tests (the declared spec is the same every time).
  let setupOnce: ReturnType<typeof familySetup> | undefined;
  async function episode(id: string) {
    const seen: string[] = [];
    const lookup = lookupTool(seen);
    const setup = await (setupOnce ??= familySetup(f, lookup.toSpec()));
    const scenario = setup.scenarios.find((s) => s.id === id)!;
    let graded = 0;
    const env = buildAgentToolEnv(setup.renderer, [lookup], setup.initial([lookup.toSpec()]), async () => [(graded++, 1), {}], {
      maxTurns: scenario.maxTurns ?? 5,
      parseErrorPolicy: scenario.policy ? ParseErrorPolicySchema.parse(scenario.policy) : null,
    });
    const first = await env.initialObservation();
    expect(setup.tokenizer.decode(modelInputToInts((first as unknown as { ob: never }).ob))).toContain('Look a word up.');
    const steps: StepResult[] = [];
    for (const action of scenario.actions) {
      steps.push(await env.step(action));
      if (steps.at(-1)!.episodeDone) break;
    }
    const text = (s: StepResult) => setup.tokenizer.decode(modelInputToInts(s.nextObservation), { skipSpecialTokens: false });
    return { seen, steps, text, graded: () => graded };
  }

  it('a well-formed call is parsed from the policy tokens, dispatched, and its tool message rendered in the family format', async () => {
    const { seen, steps, text, graded } = await episode('call, then answer');
    expect(seen).toEqual(['cat/2']);
    expect(steps[0]).toMatchObject({ reward: 0, episodeDone: false, logs: { tool_call_0: 'lookup({"word": "cat", "limit": 2})', tool_result_0: 'cat: a small feline (2)' } });
    expect(text(steps[0])).toContain(f.toolResponse);
    expect(steps[1]).toMatchObject({ reward: 1, episodeDone: true, metrics: { 'stop/completed': 1 } });
    expect(graded()).toBe(1);
  });

  it('an unknown tool, a bad and a missing argument come back as error tool messages; nothing runs; the episode goes on', async () => {
    const { seen, steps, text } = await episode('unknown tool, bad argument, missing argument');
    expect(seen).toEqual([]);
    expect(steps[0].episodeDone).toBe(false);
    expect(steps[0].logs!.tool_result_0).toBe('{"error": "Tool \'multiply\' not found"}');
    expect(String(steps[0].logs!.tool_result_1)).toMatch(/^\{"error": "Parameter validation failed: 1 validation error for lookup_params\\nlimit\\n/);
    expect(String(steps[0].logs!.tool_result_2)).toMatch(/^\{"error": "Parameter validation failed: 1 validation error for lookup_params\\nword\\n/);
    expect(text(steps[0])).toContain('{"error": "Tool \'multiply\' not found"}');
  });

  it('a malformed call is a parse error: failed_parse_reward, a parse_error stop, no tool, no grading', async () => {
    const { seen, steps, graded } = await episode('malformed call');
    expect(seen).toEqual([]);
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatchObject({ reward: -0.1, episodeDone: true, metrics: { parse_error: 1, 'stop/parse_error': 1 } });
    expect(String(steps[0].logs!.parse_errors).startsWith(f.brokenError)).toBe(true);
    expect(graded()).toBe(0);
  });

  it(f.detectsUnterminated === false ? 'an unterminated tool block reads as an answer, as the reference reads it' : 'an unterminated tool block is a parse error too', async () => {
    const { seen, steps } = await episode('unterminated tool block');
    expect(seen).toEqual([]);
    if (f.detectsUnterminated === false) {
      expect(steps[0]).toMatchObject({ reward: 1, episodeDone: true, metrics: { 'stop/completed': 1 } });
      return;
    }
    expect(steps[0]).toMatchObject({ reward: -0.1, episodeDone: true, metrics: { 'stop/parse_error': 1 } });
    expect(String(steps[0].logs!.parse_errors)).toContain(`unterminated tool block: '`);
  });

  it('valid and malformed calls in one turn: the valid one runs, the parse error is reported without the failure reward', async () => {
    const { seen, steps } = await episode('valid and malformed calls in one turn');
    expect(seen).toEqual(['cat/2']);
    expect(steps[0]).toMatchObject({ reward: 0, episodeDone: false, metrics: { parse_error: 1 } });
  });

  it('under a ParseErrorPolicy: the corrective message, a clean turn resetting the count, then the terminal reward', async () => {
    const { seen, steps, text } = await episode('malformed calls under a ParseErrorPolicy');
    expect(seen).toEqual(['cat/2']);
    expect(steps.map((s) => [s.reward, s.episodeDone])).toEqual([[-0.2, false], [0, false], [-0.2, false], [-1, true]]);
    expect(text(steps[0])).toContain(`The previous message had a formatting issue.\nError: ${f.brokenError}`);
    expect(steps[3].metrics).toMatchObject({ parse_error: 1, parse_error_masked: 1, 'stop/parse_error': 1 });
  });

  it('a turn without its stop token is broken framing: a parse_error stop, or the policy terminal reward, never a retry', async () => {
    const plain = await episode('no stop token (broken framing)');
    expect(plain.steps[0]).toMatchObject({ reward: -0.1, episodeDone: true, metrics: { parse_error: 1, 'stop/parse_error': 1 } });
    const policy = await episode('broken framing under a ParseErrorPolicy');
    expect(policy.steps[0]).toMatchObject({ reward: -1, episodeDone: true, logs: { parse_failure_kind: 'structural' } });
    expect(plain.seen.concat(policy.seen)).toEqual([]);
  });
});
