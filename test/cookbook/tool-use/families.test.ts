// The agent env parses tool calls with the model family's own renderer: the assistant turn a model
// of the family would write (rendered by the same renderer, as a supervised example's trained
// tokens) comes back as tool calls, the tool runs, and its result is rendered in the family's
// format. Families whose tokenizers ship with the project: Qwen3, Qwen3.5's XML calls, gpt-oss's harmony.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Message, Renderer } from '../../../src/cookbook/renderers/types.js';
import { getTokenizer } from '../../../src/cookbook/tokenizer.js';
import { buildAgentToolEnv, simpleToolResult, tool } from '../../../src/cookbook/tool-use/index.js';

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
