// The rollout runner's configurable features beyond limits (reference 0.6.1 rl/rollout_runner.py,
// rollout_limits.py, message_env.py): ParseErrorPolicy, the max_tool_calls seam, rollout hooks
// (by name from a registry), and tic-tac-toe's seeded random test opponent.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RLConfigSchema } from '../../../src/cookbook/config/rl.js';
import { modelInputFromInts, modelInputLength } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Message, Renderer } from '../../../src/cookbook/renderers/types.js';
import type { TokenCompleter } from '../../../src/cookbook/rl/completers.js';
import { GuessNumberEnv } from '../../../src/cookbook/rl/envs/guess-number.js';
import { randomOpponent, TicTacToeArgsSchema, TicTacToeEnvGroupBuilder, TicTacToeGame } from '../../../src/cookbook/rl/envs/tictactoe.js';
import { EnvFromMessageEnv, type MessageEnv, type MessageStepResult } from '../../../src/cookbook/rl/message-env.js';
import { bindRollout, type RolloutContext } from '../../../src/cookbook/rl/rollout-context.js';
import { DEFAULT_LENGTH_NUDGE, resolveRolloutHooks, type RolloutHooks, type RolloutState } from '../../../src/cookbook/rl/rollout-hooks.js';
import { ParseErrorPolicySchema, RolloutLimitsSchema, type ParseErrorPolicy } from '../../../src/cookbook/rl/rollout-limits.js';
import { InjectionUnsupportedError, runRollout } from '../../../src/cookbook/rl/rollout-runner.js';
import { sequentialSeeds } from '../../../src/cookbook/rl/seeds.js';
import { BaseEnvGroupBuilder, type Env, type StepResult, type Trajectory } from '../../../src/cookbook/rl/types.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';

let tok: Tokenizer;
let renderer: Renderer;
beforeAll(async () => {
  tok = await getTokenizer('tiny-llama3');
  renderer = getRenderer('role_colon', tok);
});
afterEach(() => vi.restoreAllMocks());

/** A policy answering the given turns in order; a turn without the stop sequence is a broken frame. */
const scripted = (turns: Array<{ text: string; stop?: 'stop' | 'length' | 'broken' }>): TokenCompleter => {
  let i = 0;
  return async () => {
    const { text, stop = 'stop' } = turns[Math.min(i++, turns.length - 1)];
    const tokens = tok.encode(stop === 'stop' ? `${text}\n\nUser:` : text, { addSpecialTokens: false });
    return { tokens, maybeLogprobs: tokens.map(() => -0.5), stopReason: stop === 'length' ? 'length' : 'stop' };
  };
};
const limits = (l: Record<string, unknown>) => RolloutLimitsSchema.parse(l);
const policyOf = (p: Record<string, unknown>): ParseErrorPolicy => ParseErrorPolicySchema.parse(p);
const text = (t: Trajectory, i: number) => tok.decode(t.transitions[i].ob.chunks.flatMap((c) => ('tokens' in c ? c.tokens : [])));
const stopKeys = (t: Trajectory) => t.transitions.flatMap((x) => Object.keys(x.metrics).filter((k) => k.startsWith('stop/')));

/** A conversation that answers "again" and never ends by itself; it accepts injected messages. */
class Chat implements MessageEnv {
  history: Message[] = [{ role: 'user', content: 'hi' }];
  async initialObservation() {
    return this.history;
  }
  async step(message: Message): Promise<MessageStepResult> {
    this.history = [...this.history, message, { role: 'user', content: 'again' }];
    return { reward: 0.5, episodeDone: false, nextMessages: this.history };
  }
  async addMessages(messages: Message[]) {
    this.history = [...this.history, ...messages];
    return this.history;
  }
}

/** A message env with tools: every "call N" reply asks for N tool calls; over budget it stops. */
class ToolChat extends Chat {
  maxToolCalls: number | null = null;
  made = 0;
  policy: ParseErrorPolicy | null = null;
  setMaxToolCalls(n: number) {
    this.maxToolCalls = this.maxToolCalls === null ? n : Math.min(this.maxToolCalls, n);
  }
  setParseErrorPolicy(p: ParseErrorPolicy) {
    this.policy = p;
  }
  override async step(message: Message): Promise<MessageStepResult> {
    const wanted = Number(/call (\d+)/.exec(String(message.content))?.[1] ?? 0);
    for (let i = 0; i < wanted; i++) {
      if (this.maxToolCalls !== null && this.made >= this.maxToolCalls) {
        return { reward: 0, episodeDone: true, nextMessages: this.history, metrics: { max_tool_calls: 1.0, 'stop/max_tool_calls': 1.0 } };
      }
      this.made++;
    }
    return super.step(message);
  }
}

/** A token-level env with none of the seams. */
class Bare implements Env {
  async initialObservation() {
    return { ob: modelInputFromInts([1, 2]), stopCondition: ['\n'] };
  }
  async step(): Promise<StepResult> {
    return { reward: 1, episodeDone: false, nextObservation: modelInputFromInts([1, 2, 3]), nextStopCondition: ['\n'] };
  }
}

describe('ParseErrorPolicy', () => {
  it('has the reference defaults and validation', () => {
    expect(ParseErrorPolicySchema.parse({})).toEqual({
      max_consecutive: 0,
      retry_message_template: 'The previous message had a formatting issue.\nError: {details}',
      penalty_per_error: 0,
      terminal_reward: 0,
      mask_error_turns: false,
    });
    expect(ParseErrorPolicySchema.safeParse({ retry_message_template: 'no placeholder' }).success).toBe(false);
    expect(ParseErrorPolicySchema.safeParse({ penalty_per_error: -0.1 }).success).toBe(false);
    expect(ParseErrorPolicySchema.safeParse({ max_consecutive: -1 }).success).toBe(false);
  });

  it('without a policy a broken frame keeps the one-shot semantics (failed_parse_reward, terminate_on_parse_error)', async () => {
    const t = await runRollout(scripted([{ text: 'no stop', stop: 'broken' }]), new EnvFromMessageEnv(renderer, new Chat()));
    expect(t.transitions[0]).toMatchObject({ reward: -1, episodeDone: true, metrics: { parse_error: 1, 'stop/parse_error': 1 } });
    const going = await runRollout(
      scripted([{ text: 'no stop', stop: 'broken' }, { text: 'fine' }]),
      new EnvFromMessageEnv(renderer, new Chat(), { terminateOnParseError: false }),
      limits({ max_turns: 2 }),
    );
    expect(going.transitions[0]).toMatchObject({ reward: -1, episodeDone: false, metrics: { parse_error: 1 } });
    expect(going.stopReason).toBe('max_turns');
  });

  it('a structural failure under a policy ends with terminal_reward, superseding terminate_on_parse_error', async () => {
    const env = new EnvFromMessageEnv(renderer, new Chat(), { terminateOnParseError: false, failedParseReward: -3 });
    const t = await runRollout(scripted([{ text: 'ok' }, { text: 'no stop', stop: 'broken' }]), env, null, { parseErrors: policyOf({ terminal_reward: -0.5, max_consecutive: 0 }) });
    expect(t.transitions.map((x) => x.reward)).toEqual([0.5, -0.5]);
    expect(t.transitions[1]).toMatchObject({ episodeDone: true, metrics: { parse_error: 1, 'stop/parse_error': 1 }, logs: { parse_failure_kind: 'structural' } });
    expect(t.transitions[1].metrics.parse_error_masked).toBeUndefined();
    expect(t.stopReason).toBe('parse_error');
  });

  it('mask_error_turns marks the error turn parse_error_masked', async () => {
    const t = await runRollout(scripted([{ text: 'x', stop: 'broken' }]), new EnvFromMessageEnv(renderer, new Chat()), null, { parseErrors: policyOf({ mask_error_turns: true }) });
    expect(t.transitions[0].metrics).toMatchObject({ parse_error_masked: 1, 'stop/parse_error': 1 });
  });

  it('is forwarded to an inner env that handles content failures; otherwise a retry budget is warned about', async () => {
    const inner = new ToolChat();
    const policy = policyOf({ max_consecutive: 2 });
    await runRollout(scripted([{ text: 'a' }]), new EnvFromMessageEnv(renderer, inner), limits({ max_turns: 1 }), { parseErrors: policy });
    expect(inner.policy).toEqual(policy);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    new EnvFromMessageEnv(renderer, new Chat()).setParseErrorPolicy(policy);
    expect(warn.mock.calls[0][0]).toMatch(/max_consecutive=2 .*Chat does not support a parse-error policy/);
  });

  it('an env without the seam gets a warning and the one-shot semantics', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const t = await runRollout(scripted([{ text: 'a' }]), new Bare(), limits({ max_turns: 1 }), { parseErrors: policyOf({}) });
    expect(t.stopReason).toBe('max_turns');
    expect(warn.mock.calls[0][0]).toMatch(/ParseErrorPolicy is configured, but the environment \(Bare\) does not support one/);
  });
});

describe('limits.max_tool_calls', () => {
  it('is pushed through EnvFromMessageEnv into a tool env, which stops with max_tool_calls', async () => {
    const inner = new ToolChat();
    const t = await runRollout(scripted([{ text: 'call 2' }, { text: 'call 2' }]), new EnvFromMessageEnv(renderer, inner), limits({ max_tool_calls: 3, max_turns: 5 }));
    expect(inner.maxToolCalls).toBe(3);
    expect(inner.made).toBe(3);
    expect(t.stopReason).toBe('max_tool_calls');
    expect(t.transitions).toHaveLength(2);
    expect(t.transitions[1].metrics).toMatchObject({ max_tool_calls: 1, 'stop/max_tool_calls': 1 });
  });

  it('the tighter of the env’s own cap and the rollout limit wins', async () => {
    const inner = new ToolChat();
    inner.setMaxToolCalls(1);
    await runRollout(scripted([{ text: 'call 2' }]), new EnvFromMessageEnv(renderer, inner), limits({ max_tool_calls: 3 }));
    expect(inner.maxToolCalls).toBe(1);
  });

  it('an env that cannot enforce it is warned about and runs unlimited, as the reference does', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const bare = await runRollout(scripted([{ text: 'a' }]), new Bare(), limits({ max_tool_calls: 1, max_turns: 3 }));
    expect(bare.stopReason).toBe('max_turns');
    expect(bare.transitions).toHaveLength(3);
    const adapted = await runRollout(scripted([{ text: 'call 9' }]), new EnvFromMessageEnv(renderer, new Chat()), limits({ max_tool_calls: 1, max_turns: 2 }));
    expect(adapted.stopReason).toBe('max_turns');
    expect(warn.mock.calls.map((c) => c[0])).toEqual([
      expect.stringMatching(/max_tool_calls=1 is configured, but the environment \(Bare\) does not support a tool-call limit/),
      expect.stringMatching(/max_tool_calls=1 is configured, but Chat does not support a tool-call limit/),
    ]);
  });
});

describe('rollout hooks', () => {
  it('on_stop_reason overrides a runner stop: one stop metric, the new reason', async () => {
    const hooks: RolloutHooks = { onStopReason: async (r) => (r === 'max_turns' ? 'budget_spent' : r) };
    const t = await runRollout(scripted([{ text: 'a' }]), new Bare(), limits({ max_turns: 2 }), { hooks });
    expect(t.stopReason).toBe('budget_spent');
    expect(stopKeys(t)).toEqual(['stop/budget_spent']);
  });

  it('on_stop_reason clears an env stop: the turn is no longer terminal and the rollout goes on', async () => {
    let cleared = 0;
    const hooks: RolloutHooks = { onStopReason: async (r) => (r === 'parse_error' && cleared++ === 0 ? null : r) };
    const t = await runRollout(scripted([{ text: 'x', stop: 'broken' }, { text: 'y', stop: 'broken' }]), new EnvFromMessageEnv(renderer, new Chat()), null, { hooks });
    expect(t.transitions.map((x) => x.episodeDone)).toEqual([false, true]);
    expect(t.transitions[0].metrics).toEqual({ parse_error: 1 });
    expect(stopKeys(t)).toEqual(['stop/parse_error']);
  });

  it('on_turn_begin injects messages that count toward the trajectory budget', async () => {
    const seen: RolloutState[] = [];
    const hooks: RolloutHooks = {
      onTurnBegin: async (s) => {
        seen.push({ ...s, transitions: [...s.transitions] });
        return s.turnIndex === 1 ? [{ role: 'user', content: 'a hint from the hook' }] : null;
      },
    };
    const t = await runRollout(scripted([{ text: 'a' }]), new EnvFromMessageEnv(renderer, new Chat()), limits({ max_turns: 2 }), { hooks });
    expect(text(t, 1)).toContain('a hint from the hook');
    expect(seen.map((s) => s.turnIndex)).toEqual([0, 1]);
    // The budget sees the injected tokens: a trajectory budget just above the uninjected prompt stops.
    const plain = await runRollout(scripted([{ text: 'a' }]), new EnvFromMessageEnv(renderer, new Chat()), limits({ max_turns: 2 }));
    const room = plain.transitions[1].ob.chunks.reduce((n, c) => n + ('tokens' in c ? c.tokens.length : 0), 0) + 3;
    const bounded = await runRollout(scripted([{ text: 'a' }]), new EnvFromMessageEnv(renderer, new Chat()), limits({ max_turns: 2, max_trajectory_tokens: room }), { hooks });
    expect(bounded.stopReason).toBe('max_tokens');
  });

  it('injecting into an env without the seam raises, naming the env', async () => {
    const hooks: RolloutHooks = { onTurnBegin: async () => [{ role: 'user', content: 'x' }] };
    await expect(runRollout(scripted([{ text: 'a' }]), new Bare(), null, { hooks })).rejects.toThrow(InjectionUnsupportedError);
    await expect(runRollout(scripted([{ text: 'a' }]), new Bare(), null, { hooks })).rejects.toThrow(/environment \(Bare\) does not support message injection/);
  });

  it('on_grade runs only after an env stop; on_artifacts on every graceful end', async () => {
    const calls: string[] = [];
    const hooks = (): RolloutHooks => ({ onGrade: async () => void calls.push('grade'), onArtifacts: async () => void calls.push('artifacts') });
    await runRollout(scripted([{ text: 'x', stop: 'broken' }]), new EnvFromMessageEnv(renderer, new Chat()), null, { hooks: hooks() });
    expect(calls).toEqual(['grade', 'artifacts']);
    calls.length = 0;
    await runRollout(scripted([{ text: 'a' }]), new Bare(), limits({ max_turns: 1 }), { hooks: hooks() });
    expect(calls).toEqual(['artifacts']);
  });

  it('nudge_on_length: a truncated turn is kept going once, with the nudge injected before the next turn', async () => {
    const make = resolveRolloutHooks({ name: 'nudge_on_length', args: {} });
    const policy = scripted([{ text: 'a very long', stop: 'length' }, { text: 'short' }, { text: 'long again', stop: 'length' }]);
    const t = await runRollout(policy, new EnvFromMessageEnv(renderer, new Chat()), limits({ max_turns: 4 }), { hooks: make({ seedFor: sequentialSeeds(1) }) });
    expect(t.transitions.map((x) => x.reward)).toEqual([-0.1, 0.5, -0.1]);
    expect(t.transitions.map((x) => x.episodeDone)).toEqual([false, false, true]);
    expect(text(t, 1)).toContain(DEFAULT_LENGTH_NUDGE);
    expect(t.stopReason).toBe('max_tokens'); // max_nudges=1: the second length stop stands
    expect(stopKeys(t)).toEqual(['stop/max_tokens']);
  });

  it('nudge_on_length leaves a runner budget stop alone', async () => {
    const hooks = resolveRolloutHooks({ name: 'nudge_on_length', args: { max_nudges: 3 } })({ seedFor: sequentialSeeds(1) });
    const first = await new GuessNumberEnv(9, renderer, 10).initialObservation();
    const budget = limits({ max_trajectory_tokens: modelInputLength(first.ob) + 8 });
    const t = await runRollout(scripted([{ text: 'Guess: 1 2 3 4 5 6', stop: 'length' }]), new GuessNumberEnv(9, renderer, 10), budget, { hooks });
    expect(t.transitions).toHaveLength(1);
    expect(t.stopReason).toBe('max_tokens');
    expect(stopKeys(t)).toEqual(['stop/max_tokens']);
  });

  it('nudge_on_length works with a shipped env that continues past truncation (guess the number)', async () => {
    const hooks = resolveRolloutHooks({ name: 'nudge_on_length', args: { max_nudges: 2, message: 'Only "Guess: <n>", please.' } })({ seedFor: sequentialSeeds(1) });
    const policy = scripted([{ text: 'Guess: 5 because', stop: 'length' }, { text: 'Guess: 9' }]);
    const t = await runRollout(policy, new GuessNumberEnv(9, renderer, 3), null, { hooks });
    expect(text(t, 1)).toContain('Only "Guess: <n>", please.');
    expect(t.transitions.map((x) => x.reward)).toEqual([-1, 1]);
    expect(t.transitions.at(-1)!.metrics.num_truncations_max_turn_tokens).toBe(1);
  });

  it('is selected by name from the config, with errors naming the config path', () => {
    const base = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', '..', 'configs', 'rl_guess_number.json'), 'utf8'));
    const ok = RLConfigSchema.parse({ ...base, rollout_hooks: { name: 'nudge_on_length', args: { max_nudges: 2 } }, parse_errors: { terminal_reward: -1 } });
    expect(ok.rollout_hooks).toEqual({ name: 'nudge_on_length', args: { max_nudges: 2 } });
    expect(ok.parse_errors?.terminal_reward).toBe(-1);
    expect(RLConfigSchema.parse(base)).toMatchObject({ rollout_hooks: null, parse_errors: null });
    const example = RLConfigSchema.parse(JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', '..', 'configs', 'rl_guess_number_nudge.json'), 'utf8')));
    expect(() => resolveRolloutHooks(example.rollout_hooks!)).not.toThrow();
    const unknown = RLConfigSchema.safeParse({ ...base, rollout_hooks: { name: 'nope' } });
    expect(unknown.success).toBe(false);
    expect(unknown.error!.issues.find((i) => i.path[0] === 'rollout_hooks')).toMatchObject({ path: ['rollout_hooks', 'name'], message: expect.stringMatching(/unknown rollout hook 'nope' \(registered: .*nudge_on_length/) });
    const badArgs = RLConfigSchema.safeParse({ ...base, rollout_hooks: { name: 'nudge_on_length', args: { max_nudges: 0 } } });
    expect(badArgs.error!.issues.find((i) => i.path[0] === 'rollout_hooks')?.path).toEqual(['rollout_hooks', 'args', 'max_nudges']);
    expect(() => resolveRolloutHooks({ name: 'nudge_on_length', args: { extra: 1 } })).toThrow(/rollout_hooks\.args/);
  });

  it('bindRollout gives each episode its own hooks, seeded from its position, and the parse-error policy', async () => {
    const seedsAsked: number[][] = [];
    const ctx = { seeds: (...parts: number[]) => (seedsAsked.push(parts), sequentialSeeds(...parts)) } as unknown as RolloutContext;
    class Two extends BaseEnvGroupBuilder {
      async makeEnvs() {
        return [new EnvFromMessageEnv(renderer, new Chat()), new EnvFromMessageEnv(renderer, new Chat())];
      }
    }
    const envs = await bindRollout(new Two(), ctx, null, { parseErrors: policyOf({ terminal_reward: -2 }), hooks: { name: 'nudge_on_length', args: {} } }).makeEnvs();
    expect(envs[0].rolloutHooks).toBeDefined();
    expect(envs[0].rolloutHooks).not.toBe(envs[1].rolloutHooks);
    expect(seedsAsked).toEqual([[0, 1000], [1, 1000]]);
    const t = await runRollout(scripted([{ text: 'x', stop: 'broken' }]), envs[0]);
    expect(t.transitions[0].reward).toBe(-2); // the bound policy reached the env through the runner's seam
  });
});

describe('tic-tac-toe random opponent', () => {
  const ctxWith = (prefix: number[]) => ({ seeds: (...parts: number[]) => sequentialSeeds(...prefix, ...parts) }) as unknown as RolloutContext;
  /** The policy's player plays the lowest legal cell every turn. */
  const lowest = (game: () => TicTacToeGame): TokenCompleter => async () => {
    const tokens = tok.encode(`[${game().legalMoves()[0]}]\n`, { addSpecialTokens: false });
    return { tokens, maybeLogprobs: tokens.map(() => -1), stopReason: 'stop' };
  };
  const play = async (prefix: number[]) => {
    const envs = await new TicTacToeEnvGroupBuilder(renderer, false, 'random', 8).withContext(ctxWith(prefix)).makeEnvs();
    const out: Array<{ board: string; reward: number }> = [];
    for (const env of envs) {
      const game = (env as unknown as { game: TicTacToeGame }).game;
      const t = await runRollout(lowest(() => game), env);
      out.push({ board: game.board.map((c) => c ?? '.').join(''), reward: t.transitions.reduce((s, x) => s + x.reward, 0) });
    }
    return out;
  };

  it('plays only legal moves, uniformly from the seeds', async () => {
    const game = new TicTacToeGame();
    game.move(0, '[4]');
    const seen = new Set<string>();
    const opp = randomOpponent(game, sequentialSeeds(5));
    for (let i = 0; i < 64; i++) seen.add(String((await opp([])).content));
    expect([...seen].sort()).toEqual(['[0]', '[1]', '[2]', '[3]', '[5]', '[6]', '[7]', '[8]']);
  });

  it('a recomputed episode is equal; other rollout seeds give other games', async () => {
    const first = await play([3, 1, 0]);
    expect(await play([3, 1, 0])).toEqual(first);
    const others = await Promise.all([[3, 1, 1], [3, 2, 0], [4, 1, 0]].map(play));
    expect(others.some((o) => JSON.stringify(o) !== JSON.stringify(first))).toBe(true);
    for (const game of [first, ...others]) for (const p of game) expect([-1, 0, 1]).toContain(p.reward);
  });

  it('is a test_opponent choice, and needs the rollout context for its seeds', async () => {
    expect(TicTacToeArgsSchema.parse({ batch_size: 2, num_train_datapoints: 2, num_test_datapoints: 2, test_opponent: 'random' }).test_opponent).toBe('random');
    await expect(new TicTacToeEnvGroupBuilder(renderer, false, 'random', 8).makeEnvs()).rejects.toThrow(/random opponent needs a rollout context/);
  });
});
