// tau2_bench beside the reference's (tinker-cookbook 0.6.1 eval/benchmarks/_tau2_bench.py, run at
// test time, its download cache pointed at the shipped sample): the tasks it builds (ids, system
// prompt, tools, scenarios, expected actions), the tool conversion on edge-case definitions, the
// backend's answers to sequences of calls on the shipped db (reads, writes that change what a later
// read sees, keys of every JSON type, unknown tools, a write without ids), the action grading, the
// agent's end signal, and scripted conversations through its message env — the customer prompts,
// each step's reward / end / metrics, the tool results — with the aggregate.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Judge } from '../../src/cookbook/eval/judge.js';
import { Tau2Backend } from '../../src/cookbook/eval/suites/tau2-backend.js';
import { convertTau2Tools, loadTau2Tasks, type Tau2Task } from '../../src/cookbook/eval/suites/tau2-data.js';
import { checkActions, isAgentDone, runTau2Episode } from '../../src/cookbook/eval/suites/tau2-episode.js';
import { aggregateTerminal, taskStatus, type TerminalTaskResult } from '../../src/cookbook/eval/suites/terminal-results.js';
import type { Content, Message } from '../../src/cookbook/renderers/types.js';
import { actAlways } from '../../src/cookbook/rl/side-effects.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const SHIPPED = join(import.meta.dirname, '..', '..', 'data', 'eval', 'tau2_bench');

const TOOLS = [
  { name: 'a', description: 'first', parameters: [{ name: 'x', type: 'integer', required: true, description: '', enum: [1, 2] }, { name: 'y' }, { name: 'z', type: null, required: 0, description: 'zed', enum: [] }] },
  { name: 'b' },
  { name: 'c', description: null, parameters: [] },
];

type Call = [string, unknown];
const CALLS: Call[][] = [
  [['get_user_details', { user_id: 'mia_li_3668' }], ['get_reservation_details', { reservation_id: 'NO6JO3' }], ['cancel_reservation', { reservation_id: 'NO6JO3' }], ['get_reservation_details', { reservation_id: 'NO6JO3' }]],
  [['update_reservation_baggages', { reservation_id: 'JG7FMM', total_baggages: 1, nonfree_baggages: 1, payment_id: 'gift_card_3481935' }], ['get_reservation_details', { reservation_id: 'JG7FMM' }]],
  [['get_flight_status', { flight_number: 'HAT136', date: '2024-05-15' }], ['search_direct_flight', { origin: 'PHL', destination: 'LGA', date: '2024-05-16' }], ['search_direct_flight', { origin: 'lga', destination: 'PHL', date: null }]],
  [['send_certificate', { user_id: 'mia_li_3668', amount: 200 }], ['calculate', { expression: '2 + 2' }], ['list_all_airports', {}], ['no_such_tool', { a: 1 }]],
  [['get_user_details', { user_id: 'nobody' }], ['get_user_details', { user_id: null }], ['get_user_details', { user_id: true }], ['get_reservation_details', { reservation_id: 12 }], ['get_user_details', ['a']], ['get_reservation_details', { reservation_id: ['NO6JO3'] }]],
  [['update_reservation_baggages', { reservation_id: 'ZZZ', total_baggages: 2, nonfree_baggages: 0, payment_id: 'x' }], ['get_user_details', { new_membership: 'silver', name: 'Ünïcode “q”' }], ['get_user_details', { user_id: 'mia_li_3668' }]],
];

const GRADES = [
  { predicted: [{ name: 'cancel_reservation', arguments: { reservation_id: 'no6jo3' } }], expected: [{ name: 'Cancel_Reservation', arguments: { reservation_id: 'NO6JO3' } }] },
  { predicted: [{ name: 'transfer_to_human_agents', arguments: { summary: 'x' } }], expected: [{ name: 'transfer_to_human_agents', arguments: { summary: null } }] },
  { predicted: [{ name: 'a', arguments: { k: 1 } }, { name: 'b', arguments: {} }], expected: [{ action: 'a', parameters: { k: '1' } }, { name: 'b', arguments: { v: '' } }, { name: 'b', arguments: {} }] },
  { predicted: [{ name: 'a', arguments: ['list'] }], expected: [{ name: 'a', arguments: { k: 1 } }] },
  { predicted: [{ name: 'a', arguments: { k: true, n: null } }], expected: [{ name: 'a', arguments: { k: 'TRUE', n: 'None' } }] },
  { predicted: [], expected: [] },
  { predicted: [{ name: 'a', arguments: {} }], expected: [{ name: 'x', arguments: {} }] },
];

const DONE = ['Goodbye!', 'ok AGENT_STOP now', 'Have a nice day. goodbye.  ', 'goodbye', 'Conversation_Complete', 'bye.', '', 'GOODBYE!\n'];

interface ScriptedMessage {
  content: Content;
  tool_calls?: Array<{ id: string; name: string; arguments: string }>;
}
interface Episode {
  task: number;
  max_turns: number;
  replies: string[];
  agent: ScriptedMessage[];
}
const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
const EPISODES: Episode[] = [
  {
    task: 0,
    max_turns: 30,
    replies: ['Hi, I need to cancel NO6JO3.', 'yes please', 'thanks bye USER_STOP'],
    agent: [
      { content: '', tool_calls: [call('c1', 'get_user_details', { user_id: 'mia_li_3668' }), call('c2', 'get_reservation_details', { reservation_id: 'NO6JO3' })] },
      { content: 'Shall I cancel reservation NO6JO3?' },
      { content: '', tool_calls: [call('c3', 'cancel_reservation', { reservation_id: 'NO6JO3' })] },
      { content: 'Done. The refund goes to your card.' },
    ],
  },
  {
    task: 1,
    max_turns: 30,
    replies: ['I want a bag on JG7FMM.'],
    agent: [
      { content: '', tool_calls: [call('c1', 'get_reservation_details', { reservation_id: 'JG7FMM' })] },
      { content: '', tool_calls: [{ id: 'c2', name: 'update_reservation_baggages', arguments: '{"reservation_id": "JG7FMM", "total_baggages": 1, "nonfree_baggages": 1, "payment_id": "credit_card_1"}' }] },
      { content: 'All set. Goodbye!' },
    ],
  },
  {
    task: 2,
    max_turns: 2,
    replies: ['My flight was cancelled.', 'I want compensation.'],
    agent: [{ content: 'Hello, how can I help?' }, { content: '', tool_calls: [call('c1', 'get_user_details', { user_id: 'mia_li_3668' }), { id: 'c2', name: 'get_flight_status', arguments: 'not json' }] }],
  },
  {
    task: 3,
    max_turns: 30,
    replies: ['I want a human.', '[Tool] Please, a human now.', 'ok USER_STOP'],
    agent: [
      { content: [{ type: 'thinking', thinking: 'The user wants a human.' }, { type: 'text', text: 'Can you tell me more?' }] },
      { content: '', tool_calls: [call('c1', 'transfer_to_human_agents', { summary: 'lost pet' })] },
      { content: 'YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.' },
    ],
  },
  { task: 0, max_turns: 30, replies: ['Cancel please.'], agent: [{ content: 'I cannot help with that. Goodbye.' }] },
  // Long turns (cut at 500 code points, astral ones included) and more than the last ten messages.
  {
    task: 1,
    max_turns: 30,
    replies: ['Hi.', ...Array.from({ length: 6 }, (_, i) => `reply ${i} ${'ü🙂'.repeat(300)}`)],
    agent: [...Array.from({ length: 6 }, (_, i) => ({ content: `turn ${i} ${'é🙂x'.repeat(250)}` })), { content: 'Goodbye!' }],
  },
];

interface Step {
  reward: number;
  done: boolean;
  metrics: Record<string, number>;
}
let reference: {
  envs: Array<{ id: string; system_prompt: string; tools: unknown; user_scenario: unknown; expected_actions: unknown }>;
  envs_custom: Array<{ id: string; system_prompt: string }>;
  converted: unknown;
  answers: string[][];
  grades: Array<[number, Record<string, number>]>;
  done: boolean[];
  episodes: Array<{ asked: Message[][]; steps: Step[]; history: Array<{ role: string; content: string }> }>;
  aggregate: { score: number; num_correct: number; num_examples: number };
};

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({ cache: SHIPPED, tools: TOOLS, calls: CALLS, grades: GRADES, done: DONE, episodes: EPISODES });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'eval_tau2_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);

/** The customer: the given replies in order, recording each prompt. */
function scriptedUser(replies: string[]): Judge & { asked: Message[][] } {
  const queue = [...replies];
  const asked: Message[][] = [];
  return { name: 'scripted', asked, ask: async (messages) => (asked.push(messages), queue.shift()!) };
}

async function play(e: Episode, tasks: Tau2Task[]) {
  const script = e.agent.map((m): Message => ({ role: 'assistant', content: m.content, ...(m.tool_calls ? { tool_calls: m.tool_calls.map((c) => ({ id: c.id, function: { name: c.name, arguments: c.arguments } })) } : {}) }));
  const user = scriptedUser(e.replies);
  const out = await runTau2Episode(tasks[e.task]!, {
    agent: async () => script.shift()!,
    prefixWithTools: () => [{ role: 'system', content: 'policy' }],
    user,
    once: actAlways,
    maxTurns: e.max_turns,
  });
  return { out, asked: user.asked, agentLeft: script.length };
}

describe('tau2_bench beside the reference', () => {
  it('builds the same tasks from the shipped sample: ids, the policy as system prompt, tools, scenarios, expected actions', () => {
    const ours = loadTau2Tasks(SHIPPED, null, null);
    expect(ours.map((t) => ({ id: t.taskName, system_prompt: t.systemPrompt, tools: t.tools, user_scenario: t.userScenario, expected_actions: t.expectedActions }))).toEqual(reference.envs);
    expect(loadTau2Tasks(SHIPPED, 2, 'Be brief.').map((t) => ({ id: t.taskName, system_prompt: t.systemPrompt }))).toEqual(reference.envs_custom);
  });

  it('converts tool definitions the same way (missing and null types, falsy descriptions, enums, required)', () => {
    expect(convertTau2Tools(TOOLS)).toEqual(reference.converted);
  });

  it("answers each sequence of calls as the reference's backend, state carried through the sequence", () => {
    const [task] = loadTau2Tasks(SHIPPED, 1, null);
    const ours = CALLS.map((seq) => {
      const backend = new Tau2Backend(task!.db, task!.tools);
      return seq.map(([name, args]) => backend.execute(name, args));
    });
    expect(ours).toEqual(reference.answers);
  });

  it('grades predicted calls against expected actions the same way', () => {
    expect(GRADES.map((g) => checkActions(g.predicted, g.expected)).map(({ score, metrics }) => [score, metrics])).toEqual(reference.grades);
  });

  it("reads the agent's end signal the same way", () => {
    expect(DONE.map(isAgentDone)).toEqual(reference.done);
  });

  it('plays scripted conversations to the same customer prompts, tool results, end and metrics; the same aggregate', async () => {
    const tasks = loadTau2Tasks(SHIPPED, null, null);
    const results: TerminalTaskResult[] = [];
    for (const [i, e] of EPISODES.entries()) {
      const ref = reference.episodes[i]!;
      const { out, asked, agentLeft } = await play(e, tasks);
      expect(asked, `episode ${i}: customer prompts`).toEqual(ref.asked);
      expect(out.history.filter((m) => m.role === 'tool' || m.role === 'user').map((m) => ({ role: m.role, content: m.content })), `episode ${i}: history`).toEqual(ref.history);
      const last = ref.steps.at(-1)!;
      expect(last.done).toBe(true);
      expect(out.turns, `episode ${i}: turns`).toBe(ref.steps.length);
      expect(agentLeft).toBe(e.agent.length - ref.steps.length);
      expect(out.score).toBe(last.reward);
      expect(out.metrics).toEqual(last.metrics);
      results.push({ index: i, id: tasks[e.task]!.taskName, status: taskStatus({ error: null, reward: out.score }), correct: out.score > 0, reward: out.score, reward_details: out.metrics, turns: out.turns, seconds: 0, test_verdict: null, error: null, stop_reason: out.stopReason, trajectory: null });
    }
    const agg = aggregateTerminal(results);
    expect({ score: agg.score, num_correct: agg.num_correct, num_examples: agg.num_examples }).toEqual(reference.aggregate);
  });
});
