// The tool-using agent env beside the reference's (tinker-cookbook 0.6.1 build_agent_tool_env, run
// at test time by agent_env_cases.py) for every renderer family with a tool-call format whose
// tokenizer does not ship here: Kimi K2 and K2.5, DeepSeek V3 and V4.1, GLM 5.3, Nemotron 3, on the
// renderer parity tests' stand-in tokenizers. Both envs are stepped with the same policy tokens
// (test/cookbook/tool-use/family-scenarios.ts): a well-formed call, an unknown tool with bad and
// missing arguments, a malformed call, an unterminated block, a mix of valid and malformed calls,
// broken framing, and the last two kinds under a ParseErrorPolicy. Per step: the renderer's
// parse_response, reward, done, metrics, logs (each call and its tool message), the next
// observation's tokens, and which tool calls ran.
//
// One deliberate difference is hidden: the wording of a schema failure after its first lines
// (pydantic's detail vs zod's; docs/tool-use.md).
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { ParseErrorPolicySchema } from '../../src/cookbook/rl/rollout-limits.js';
import { buildAgentToolEnv, simpleToolResult, tool } from '../../src/cookbook/tool-use/index.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';
import { FAMILIES, familySetup, type FamilySetup } from '../cookbook/tool-use/family-scenarios.js';

function lookupTool(calls: string[]) {
  return tool({
    name: 'lookup',
    description: 'Look a word up.',
    parameters: z.object({ word: z.string().describe('The word to look up'), limit: z.int().default(1) }),
    run: ({ word, limit }) => {
      calls.push(`lookup('${word}', ${limit})`);
      return simpleToolResult(`${word}: a small feline (${limit})`);
    },
  });
}

interface StepOut {
  parse: { message: unknown; termination: string };
  reward: number;
  episode_done: boolean;
  metrics: Record<string, number>;
  logs: Record<string, unknown>;
  next_observation: number[];
}
interface ScenarioOut {
  id: string;
  initial: number[];
  steps: StepOut[];
  calls: string[];
}

const setups = new Map<string, FamilySetup>();
let reference: Map<string, ScenarioOut[]>;

beforeAll(async () => {
  for (const f of FAMILIES) setups.set(f.renderer, await familySetup(f, lookupTool([]).toSpec()));
  const request = {
    families: FAMILIES.map((f) => ({
      renderer: f.renderer,
      tokenizer_dir: f.tokenizerDir(),
      scenarios: setups.get(f.renderer)!.scenarios.map((s) => ({ id: s.id, actions: s.actions, policy: s.policy ?? null, max_turns: s.maxTurns ?? null })),
    })),
  };
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'agent_env_cases.py')], {
    env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' },
    input: JSON.stringify(request),
  });
  expect(child.status, child.stderr).toBe(0);
  const out = JSON.parse(child.stdout) as { families: Array<{ renderer: string; scenarios: ScenarioOut[] }> };
  reference = new Map(out.families.map((f) => [f.renderer, f.scenarios]));
}, 180_000);

/** A schema failure's first lines (count, model, field) are compared; pydantic's and zod's detail after them is not. */
const VALIDATION_DETAIL = /(Parameter validation failed: \d+ validation errors? for \w+\\n\w+\\n)(?:[^"\\]|\\.)*/g;
const hideDetail = (s: string) => s.replace(VALIDATION_DETAIL, '$1…');
const hideInLogs = (logs: Record<string, unknown>) => Object.fromEntries(Object.entries(logs).map(([k, v]) => [k, typeof v === 'string' ? hideDetail(v) : v]));

describe.each(FAMILIES.map((f) => [f.family, f] as const))('%s: the agent env beside the reference', (_name, f) => {
  const scenarioIds = ['call, then answer', 'unknown tool, bad argument, missing argument', 'malformed call', 'unterminated tool block', 'valid and malformed calls in one turn', 'no stop token (broken framing)', 'malformed calls under a ParseErrorPolicy', 'broken framing under a ParseErrorPolicy'];

  it.each(scenarioIds)('%s', async (id) => {
    const setup = setups.get(f.renderer)!;
    const scenario = setup.scenarios.find((s) => s.id === id)!;
    const ref = reference.get(f.renderer)!.find((s) => s.id === id)!;
    const calls: string[] = [];
    const lookup = lookupTool(calls);
    const env = buildAgentToolEnv(setup.renderer, [lookup], setup.initial([lookup.toSpec()]), async () => [1, { graded: 1 }], {
      maxTurns: scenario.maxTurns ?? 5,
      parseErrorPolicy: scenario.policy ? ParseErrorPolicySchema.parse(scenario.policy) : null,
    });
    const initial = await env.initialObservation();
    expect(modelInputToInts((initial as unknown as { ob: never }).ob), 'initial observation (tool declaration)').toEqual(ref.initial);

    const decode = (ids: number[]) => setup.tokenizer.decode(ids, { skipSpecialTokens: false });
    let stepped = 0;
    for (const [i, action] of scenario.actions.entries()) {
      const expected = ref.steps[i];
      expect(expected, `the reference's episode ended before step ${i}`).toBeDefined();
      const parsed = setup.renderer.parseResponse(action);
      expect({ message: JSON.parse(JSON.stringify(parsed.message)), termination: parsed.termination }, `step ${i}: parse_response`).toEqual(expected.parse);
      const step = await env.step(action);
      stepped++;
      expect({ reward: step.reward, episode_done: step.episodeDone, metrics: step.metrics }, `step ${i}: reward, done, metrics`).toEqual({
        reward: expected.reward,
        episode_done: expected.episode_done,
        metrics: expected.metrics,
      });
      expect(hideInLogs(step.logs ?? {}), `step ${i}: logs`).toEqual(hideInLogs(expected.logs));
      const ours = modelInputToInts(step.nextObservation);
      if (hideDetail(decode(expected.next_observation)) === decode(expected.next_observation)) {
        expect(ours, `step ${i}: next observation\n${decode(ours)}\nreference:\n${decode(expected.next_observation)}`).toEqual(expected.next_observation);
      } else {
        expect(hideDetail(decode(ours)), `step ${i}: next observation`).toBe(hideDetail(decode(expected.next_observation)));
      }
      if (step.episodeDone) break;
    }
    expect(stepped, 'steps taken').toBe(ref.steps.length);
    expect(calls, 'tool calls that ran').toEqual(ref.calls);
  });
});
