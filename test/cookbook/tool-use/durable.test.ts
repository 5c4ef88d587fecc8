// Tool calls happen once per logical position: a rollout retried after a crash in the middle of a
// multi-call episode replays the recorded results from the run store instead of calling the tools
// again, and ends with the conversation of an uninterrupted rollout.
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import { runStoreOnce } from '../../../src/cookbook/rl/side-effects.js';
import type { StepResult } from '../../../src/cookbook/rl/types.js';
import { RunStore } from '../../../src/cookbook/run-store.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';
import { buildAgentToolEnv, durableToolCalls, simpleToolResult, tool } from '../../../src/cookbook/tool-use/index.js';

let tok: Tokenizer;
let renderer: Renderer;
let imEnd: number;
beforeAll(async () => {
  tok = await getTokenizer('tiny-qwen3');
  renderer = getRenderer('qwen3', tok);
  imEnd = tok.tokenToId('<|im_end|>');
});

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'durable-tools-'));
  dirs.push(d);
  return d;
};

const action = (text: string) => [...tok.encode(text, { addSpecialTokens: false }), imEnd];
const call = (name: string, args: object) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
const turns = () => [
  action(`<think>\nx\n</think>\n\n${call('deposit', { amount: 5 })}\n${call('deposit', { amount: 7 })}`),
  action(`<think>\nx\n</think>\n\n${call('deposit', { amount: 1 })}`),
  action('<think>\nx\n</think>\n\nDone.'),
];

/** A tool with an effect outside the process (an append to a ledger file) and a result that depends on when it ran. */
function bank(ledger: string) {
  return tool({
    name: 'deposit',
    parameters: z.object({ amount: z.int() }),
    run: ({ amount }) => {
      appendFileSync(ledger, `${amount}\n`);
      const lines = readFileSync(ledger, 'utf8').trim().split('\n');
      return simpleToolResult(`deposit #${lines.length}: ${amount}`);
    },
  });
}

/** One episode's env as a rollout activity builds it: tool calls recorded at (step 3, group 1, attempt 0), episode 2. */
function episodeEnv(logPath: string, ledger: string) {
  const once = runStoreOnce(new RunStore(logPath), [3, 1, 0]);
  return buildAgentToolEnv(renderer, [bank(ledger)], [{ role: 'user', content: 'Deposit 5 and 7, then 1.' }], async () => [1, {}], {
    toolCallRunner: durableToolCalls(once, 2),
    toolExecution: 'sequential',
  });
}

async function rollout(logPath: string, ledger: string, turns: number[][]): Promise<StepResult[]> {
  const env = episodeEnv(logPath, ledger);
  await env.initialObservation();
  const steps: StepResult[] = [];
  for (const t of turns) steps.push(await env.step(t));
  return steps;
}

describe('durable tool calls', () => {
  it('a rollout retried after a crash mid-episode replays the recorded calls and equals the uninterrupted one', async () => {
    const cleanDir = tempDir();
    const clean = await rollout(join(cleanDir, 'run'), join(cleanDir, 'ledger'), turns());
    expect(clean.map((s) => s.logs)).toMatchObject([{ tool_result_0: 'deposit #1: 5', tool_result_1: 'deposit #2: 7' }, { tool_result_0: 'deposit #3: 1' }, {}]);

    const dir = tempDir();
    const logPath = join(dir, 'run');
    const ledger = join(dir, 'ledger');
    // The first attempt dies after turn 1's calls ran (and were recorded), before turn 2.
    await rollout(logPath, ledger, turns().slice(0, 1));
    expect(readFileSync(ledger, 'utf8')).toBe('5\n7\n');
    // The retried activity recomputes the episode from the start: turn 1 comes from the record.
    const retried = await rollout(logPath, ledger, turns());
    expect(readFileSync(ledger, 'utf8')).toBe('5\n7\n1\n'); // each deposit happened once
    expect(retried.map((s) => [s.reward, s.episodeDone, s.logs, s.metrics])).toEqual(clean.map((s) => [s.reward, s.episodeDone, s.logs, s.metrics]));
    expect(retried.map((s) => modelInputToInts(s.nextObservation))).toEqual(clean.map((s) => modelInputToInts(s.nextObservation)));
    expect(readdirSync(join(logPath, '.cookbook', 'store', 'side_effects', '3_1_0')).filter((f) => f.endsWith('.json')).sort()).toEqual([
      'tool_episode_2_turn_1_call_0.json',
      'tool_episode_2_turn_1_call_1.json',
      'tool_episode_2_turn_2_call_0.json',
    ]);

    // A third attempt (say, a replay after restoring a checkpoint) calls nothing at all.
    await rollout(logPath, ledger, turns());
    expect(readFileSync(ledger, 'utf8')).toBe('5\n7\n1\n');
  });

  it('a different call at a recorded position runs and replaces the record', async () => {
    const dir = tempDir();
    const logPath = join(dir, 'run');
    const ledger = join(dir, 'ledger');
    await rollout(logPath, ledger, turns().slice(0, 1));
    const other = action(`<think>\nx\n</think>\n\n${call('deposit', { amount: 9 })}\n${call('deposit', { amount: 7 })}`);
    const [step] = await rollout(logPath, ledger, [other]);
    expect(step.logs).toMatchObject({ tool_result_0: 'deposit #3: 9', tool_result_1: 'deposit #2: 7' });
    expect(readFileSync(ledger, 'utf8')).toBe('5\n7\n9\n');
  });
});
