// tau2_bench's config and data as the CLI resolves them, and an episode's durability: the
// reference's 30 turns and a judge (the customer) accepted; --data a folder in the reference's cache
// layout, a missing file named; terminal.only by example id; the customer's replies recorded per
// turn in the run store, an episode played again from them asking the customer nothing, and one
// that takes another path asking again from where it parted; a turn cut by max_tokens ending it.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkEvalData, resolveEval } from '../../../src/cli/eval.js';
import type { Judge } from '../../../src/cookbook/eval/judge.js';
import { loadTau2Tasks, tau2Source } from '../../../src/cookbook/eval/suites/tau2-data.js';
import { runTau2Episode } from '../../../src/cookbook/eval/suites/tau2-episode.js';
import { loadTerminalEval } from '../../../src/cookbook/eval/suites/terminal.js';
import type { Message } from '../../../src/cookbook/renderers/types.js';
import { runStoreOnce } from '../../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../../src/cookbook/run-store.js';

const dir = mkdtempSync(join(tmpdir(), 'h56i-tau2-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SAMPLE = join(import.meta.dirname, '..', '..', '..', 'data', 'eval', 'tau2_bench');
const resolve = (args: Parameters<typeof resolveEval>[2] = {}) => resolveEval('tiny-qwen3', 'tau2_bench', args, { runsDir: join(dir, 'runs'), workflowId: `cfg-${Math.random().toString(36).slice(2)}` });

describe('tau2_bench: config and data', () => {
  it("has the reference's 30 turns, one episode per task, and takes a judge for its customer", () => {
    const c = resolve({ data: SAMPLE }).config;
    expect(c.terminal?.max_turns).toBe(30);
    expect(resolve({ set: ['judge.model=tiny-qwen3'] }).config.judge?.model).toBe('tiny-qwen3');
    expect(() => resolve({ samples: '2' })).toThrow(/one episode per task/);
    expect(() => resolveEval('tiny-qwen3', 'gsm8k', { set: ['judge.model=x'] }, { runsDir: join(dir, 'runs'), workflowId: 'cfg-x' })).toThrow(/judged suites \(arena_hard, tau2_bench\)/);
  });

  it('--data: a folder in the cache layout; --limit and terminal.only by example id; a missing file named', async () => {
    expect(await checkEvalData(resolve({ data: SAMPLE }))).toBe(4);
    expect((await loadTerminalEval(resolve({ data: SAMPLE, limit: '2' }).config)).tasks.map((t) => t.taskName)).toEqual(['tau2_bench_0', 'tau2_bench_1']);
    const only = await loadTerminalEval(resolve({ data: SAMPLE, set: ['terminal.only=["tau2_bench_3","tau2_bench_1"]'] }).config);
    expect(only.tasks.map((t) => t.taskName)).toEqual(['tau2_bench_3', 'tau2_bench_1']);
    await expect(loadTerminalEval(resolve({ data: SAMPLE, set: ['terminal.only=["tau2_bench_9"]'] }).config)).rejects.toThrow(/no task "tau2_bench_9"/);
    expect(tau2Source(SAMPLE, 'elsewhere')).toBe(SAMPLE);
    const broken = join(dir, 'broken');
    cpSync(SAMPLE, broken, { recursive: true });
    rmSync(join(broken, 'airline', 'db.json'));
    expect(() => loadTau2Tasks(broken, null, null)).toThrow(/broken\/airline\/db\.json: missing/);
  });

  it('the system prompt: the policy (first 8000 characters) unless one is set; an empty one takes the policy too', () => {
    const [withPolicy] = loadTau2Tasks(SAMPLE, 1, null);
    expect(withPolicy!.systemPrompt.startsWith('# Airline Agent Policy')).toBe(true);
    expect(loadTau2Tasks(SAMPLE, 1, '')[0]!.systemPrompt).toBe(withPolicy!.systemPrompt);
    expect(loadTau2Tasks(SAMPLE, 1, 'Be brief.')[0]!.systemPrompt).toBe('Be brief.');
  });
});

describe('tau2_bench: an episode replayed from its records', () => {
  const [task] = loadTau2Tasks(SAMPLE, 1, null);
  const store = new RunStore(join(dir, 'run'));
  const customer = (replies: string[], asked: Message[][]): Judge => ({ name: 'scripted', ask: async (m) => (asked.push(m), replies.shift() ?? 'USER_STOP') });
  const agent = (script: Array<Message | null>) => async () => script.shift()!;
  const cancel: Message = { role: 'assistant', content: '', tool_calls: [{ id: 'c', function: { name: 'cancel_reservation', arguments: '{"reservation_id": "NO6JO3"}' } }] };
  const play = (script: Message[], user: Judge) =>
    runTau2Episode(task!, { agent: agent(script), prefixWithTools: () => [{ role: 'system', content: 'p' }], user, once: runStoreOnce(store, ['eval', 0, 0]), maxTurns: 5 });

  it('records each customer reply at its turn; a replay asks nothing and ends the same; another path asks from where it parted', async () => {
    const asked: Message[][] = [];
    const first = await play([{ role: 'assistant', content: 'Which one?' }, cancel, { role: 'assistant', content: 'Done.' }], customer(['Cancel NO6JO3.', 'NO6JO3 please', 'thanks USER_STOP'], asked));
    expect(asked).toHaveLength(3);
    expect([first.score, first.turns, first.stopReason]).toEqual([1, 3, 'user_stop']);
    expect(['user_0_0.json', 'user_0_1.json', 'user_0_3.json'].every((f) => store.hasBlob(`side_effects/eval_0_0/${f}`))).toBe(true);

    const none: Message[][] = [];
    const again = await play([{ role: 'assistant', content: 'Which one?' }, cancel, { role: 'assistant', content: 'Done.' }], customer([], none));
    expect(none).toHaveLength(0);
    expect(again.history).toEqual(first.history);
    expect(again.metrics).toEqual(first.metrics);

    const parted: Message[][] = [];
    const other = await play([{ role: 'assistant', content: 'Your user id?' }, { role: 'assistant', content: 'Goodbye!' }], customer(['mia_li_3668'], parted));
    expect(parted).toHaveLength(1);
    expect(other.history[1]).toEqual(first.history[1]);
    expect([other.score, other.stopReason]).toEqual([0, 'agent_done']);
  });

  it("a turn cut by max_tokens ends the conversation with reward 0, whatever was matched (the reference's message env)", async () => {
    const cut = await runTau2Episode(task!, {
      agent: agent([cancel, null]),
      prefixWithTools: () => [],
      user: customer(['Cancel NO6JO3.'], []),
      once: runStoreOnce(store, ['eval', 0, 1]),
      maxTurns: 5,
    });
    expect([cut.score, cut.turns, cut.stopReason, cut.metrics]).toEqual([0, 2, 'max_tokens', { max_tokens_reached: 1, 'stop/max_tokens': 1 }]);
    expect(cut.calls.map((c) => c.name)).toEqual(['cancel_reservation']);
  });

  it('a call to a tool the domain lacks fails the episode (the reference’s step raises there): reward 0, the tool named', async () => {
    const bad: Message = { role: 'assistant', content: '', tool_calls: [{ id: 'b', function: { name: 'book_flight', arguments: '{}' } }] };
    const out = await runTau2Episode(task!, { agent: agent([cancel, bad]), prefixWithTools: () => [], user: customer(['Hi.'], []), once: runStoreOnce(store, ['eval', 0, 2]), maxTurns: 5 });
    expect([out.score, out.turns, out.stopReason]).toEqual([0, 2, 'unknown_tool']);
    expect(out.error).toMatch(/"book_flight", which the airline domain has no tool for/);
  });
});
