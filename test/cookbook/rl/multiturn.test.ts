// Multi-turn RL pieces without a server: the rollout runner's limits, grade-then-clamp, the
// message-env adapter's flat rewards, and the game logic of the shipped multi-turn envs (word and
// number splits pinned to Python's random.Random(0)).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { modelInputFromInts, modelInputLength } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Message, Renderer } from '../../../src/cookbook/renderers/types.js';
import type { TokenCompleter } from '../../../src/cookbook/rl/completers.js';
import { GuessNumberEnv, guessFeedback, guessNumberSplit, GUESS_NUMBER_FAIL_TO_PARSE } from '../../../src/cookbook/rl/envs/guess-number.js';
import { extractScore, graderPrompt, loadRubricDatapoints, RubricGradedEnv, RubricSchema } from '../../../src/cookbook/rl/envs/rubric.js';
import { optimalMove, parseMove, TicTacToeEnvGroupBuilder, TicTacToeGame } from '../../../src/cookbook/rl/envs/tictactoe.js';
import { loadWords, TwentyQuestionsEnv, twentyQuestionsReward, twentyQuestionsSplit } from '../../../src/cookbook/rl/envs/twenty-questions.js';
import { EnvFromMessageEnv, type MessageEnv } from '../../../src/cookbook/rl/message-env.js';
import { registeredRLDataset } from '../../../src/cookbook/rl/registry.js';
import { RolloutLimitsSchema, SamplingTurnTimeoutError, TerminationRewardPolicySchema } from '../../../src/cookbook/rl/rollout-limits.js';
import { runRollout, TRUNCATION_METRIC_KEY } from '../../../src/cookbook/rl/rollout-runner.js';
import { doGroupRollout, failFast } from '../../../src/cookbook/rl/rollouts.js';
import { BaseEnvGroupBuilder, type Env, type StepResult } from '../../../src/cookbook/rl/types.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';

let tok: Tokenizer;
let renderer: Renderer;
beforeAll(async () => {
  tok = await getTokenizer('tiny-llama3');
  renderer = getRenderer('role_colon', tok);
});

/** A policy that answers the given texts in turn, each ending with the role-colon stop sequence. */
const scripted = (texts: string[], stop: 'stop' | 'length' = 'stop'): TokenCompleter => {
  let i = 0;
  return async () => {
    const t = texts[Math.min(i++, texts.length - 1)];
    const tokens = tok.encode(stop === 'stop' ? `${t}\n\nUser:` : t, { addSpecialTokens: false });
    return { tokens, maybeLogprobs: tokens.map(() => -0.5), stopReason: stop };
  };
};

/** An env that never ends on its own; reward 1 per turn; observation grows by 3 tokens a turn. */
class EndlessEnv implements Env {
  private n = 0;
  async initialObservation() {
    return { ob: modelInputFromInts([1, 2, 3]), stopCondition: ['\n'] };
  }
  async step(): Promise<StepResult> {
    this.n++;
    return { reward: 1, episodeDone: false, nextObservation: modelInputFromInts(Array(3 + 3 * this.n).fill(7)), nextStopCondition: ['\n'] };
  }
}
const tokens = (n: number): TokenCompleter => async () => ({ tokens: Array(n).fill(5), maybeLogprobs: Array(n).fill(-1), stopReason: 'stop' });

describe('rollout runner limits', () => {
  it('defaults are all unlimited and validated like the reference', () => {
    expect(RolloutLimitsSchema.parse({})).toEqual({
      max_turns: null, max_trajectory_tokens: null, max_sampled_tokens: null, max_tool_calls: null, max_turn_tokens: null, rollout_timeout_seconds: null, sampling_turn_timeout_seconds: null,
    });
    expect(RolloutLimitsSchema.safeParse({ max_turns: 0 }).success).toBe(false);
    expect(TerminationRewardPolicySchema.parse({})).toEqual({
      zero_reward_on_limit: false, limit_stop_reasons: ['max_tokens', 'max_sampled_tokens', 'max_turns', 'max_tool_calls', 'rollout_timeout'], skip_grading_on_timeout: false, grader_timeout_seconds: null, pass_all_messages_to_grader: false,
    });
  });

  it('max_turns stops before the next turn, keeps the rewards and marks the last transition', async () => {
    const t = await runRollout(tokens(2), new EndlessEnv(), RolloutLimitsSchema.parse({ max_turns: 3 }));
    expect(t.transitions).toHaveLength(3);
    expect(t.stopReason).toBe('max_turns');
    expect(t.transitions.map((x) => x.episodeDone)).toEqual([false, false, true]);
    expect(t.transitions[2].metrics).toEqual({ 'stop/max_turns': 1 });
    expect(t.transitions.map((x) => x.reward)).toEqual([1, 1, 1]);
  });

  it('budgets: per-call cap is the smallest term; a remainder ≤ 1 stops (trajectory before sampled)', async () => {
    const caps: Array<number | undefined> = [];
    const policy: TokenCompleter = async (_ob, _s, o) => {
      caps.push(o?.maxTokens);
      return { tokens: [5, 5], maybeLogprobs: [-1, -1], stopReason: 'stop' };
    };
    const t = await runRollout(policy, new EndlessEnv(), RolloutLimitsSchema.parse({ max_trajectory_tokens: 10, max_sampled_tokens: 100, max_turn_tokens: 50 }));
    // obs lengths 3, 6, 9: caps 7, 4, then 10 − 9 = 1 ≤ 1 stops with max_tokens.
    expect(caps).toEqual([7, 4]);
    expect(t.stopReason).toBe('max_tokens');
    const s = await runRollout(tokens(4), new EndlessEnv(), RolloutLimitsSchema.parse({ max_sampled_tokens: 9 }));
    expect(s.stopReason).toBe('max_sampled_tokens');
    expect(s.transitions).toHaveLength(2);
  });

  it('a length stop the env continues past is counted on the final transition', async () => {
    const policy: TokenCompleter = async () => ({ tokens: [5], maybeLogprobs: [-1], stopReason: 'length' });
    const t = await runRollout(policy, new EndlessEnv(), RolloutLimitsSchema.parse({ max_turns: 2 }));
    expect(t.transitions[1].metrics[TRUNCATION_METRIC_KEY]).toBe(2);
  });

  it('sampling_turn_timeout raises; rollout_timeout returns the partial trajectory gracefully', async () => {
    const slow: TokenCompleter = () => new Promise((r) => setTimeout(() => r({ tokens: [5], maybeLogprobs: [-1], stopReason: 'stop' }), 80));
    await expect(runRollout(slow, new EndlessEnv(), RolloutLimitsSchema.parse({ sampling_turn_timeout_seconds: 0.02 }))).rejects.toBeInstanceOf(SamplingTurnTimeoutError);
    const t = await runRollout(slow, new EndlessEnv(), RolloutLimitsSchema.parse({ rollout_timeout_seconds: 0.2 }));
    expect(t.stopReason).toBe('rollout_timeout');
    expect(t.transitions.length).toBeGreaterThanOrEqual(1);
    expect(t.transitions.at(-1)!.episodeDone).toBe(true);
    expect(t.transitions.at(-1)!.metrics['stop/rollout_timeout']).toBe(1);
  });

  it('the env’s own rolloutLimits apply when the runner gets none', async () => {
    const env = new EndlessEnv() as Env;
    env.rolloutLimits = RolloutLimitsSchema.parse({ max_turns: 1 });
    expect((await runRollout(tokens(1), env)).stopReason).toBe('max_turns');
  });
});

describe('termination reward policy (grade, then clamp)', () => {
  class Builder extends BaseEnvGroupBuilder {
    graded = 0;
    constructor(private readonly groupReward: number) {
      super();
    }
    async makeEnvs() {
      return [new EndlessEnv(), new EndlessEnv()].map((e) => Object.assign(e, { rolloutLimits: RolloutLimitsSchema.parse({ max_turns: 2 }) }));
    }
    override async computeGroupRewards(t: unknown[]) {
      this.graded++;
      return t.map((): [number, Record<string, number>] => [this.groupReward, {}]);
    }
  }
  it('clamps a positive total of a limit-stopped trajectory to exactly 0 and leaves negative totals', async () => {
    const policy = TerminationRewardPolicySchema.parse({ zero_reward_on_limit: true });
    const up = await doGroupRollout(new Builder(0.5), tokens(1), failFast(), policy);
    expect(up.getTotalRewards()).toEqual([0, 0]);
    expect(up.finalRewardsG).toEqual([-2, -2]);
    expect(up.metricsG[0]).toEqual({ zero_reward_on_limit: 1 });
    const down = await doGroupRollout(new Builder(-5), tokens(1), failFast(), policy);
    expect(down.getTotalRewards()).toEqual([-3, -3]);
    const untouched = await doGroupRollout(new Builder(0.5), tokens(1), failFast(), null);
    expect(untouched.getTotalRewards()).toEqual([2.5, 2.5]);
  });
  it('skips grading only when every rollout timed out, with clamp and skip both on', async () => {
    const b = new Builder(3);
    const policy = TerminationRewardPolicySchema.parse({ zero_reward_on_limit: true, skip_grading_on_timeout: true });
    await doGroupRollout(b, tokens(1), failFast(), policy);
    expect(b.graded).toBe(1); // stopped on max_turns, not a timeout: graded
  });
});

describe('EnvFromMessageEnv (message_env_test defaults)', () => {
  class Echo implements MessageEnv {
    history: Message[] = [{ role: 'user', content: 'hi' }];
    async initialObservation() {
      return this.history;
    }
    async step(message: Message) {
      this.history = [...this.history, message, { role: 'user', content: 'again' }];
      return { reward: 0.25, episodeDone: this.history.length > 4, nextMessages: this.history, metrics: { turn: 1 } };
    }
  }
  it('renders, parses, and passes the inner env’s reward through', async () => {
    const env = new EnvFromMessageEnv(renderer, new Echo());
    const t = await runRollout(scripted(['one', 'two']), env);
    expect(t.transitions.map((x) => x.reward)).toEqual([0.25, 0.25]);
    expect(t.transitions[1].episodeDone).toBe(true);
    expect(modelInputLength(t.transitions[1].ob)).toBeGreaterThan(modelInputLength(t.transitions[0].ob));
  });
  it('a length stop ends with context_overflow_reward −0.1; a broken parse with failed_parse_reward −1', async () => {
    const len = await runRollout(scripted(['cut off'], 'length'), new EnvFromMessageEnv(renderer, new Echo()));
    expect(len.transitions[0]).toMatchObject({ reward: -0.1, episodeDone: true, metrics: { max_tokens_reached: 1, 'stop/max_tokens': 1 } });
    expect(len.stopReason).toBe('max_tokens');
    const env = new EnvFromMessageEnv(renderer, new Echo());
    const broken = await env.step(tok.encode('no stop here', { addSpecialTokens: false }), { extra: { stop_reason: 'stop' } });
    expect(broken).toMatchObject({ reward: -1, episodeDone: true, metrics: { parse_error: 1, 'stop/parse_error': 1 } });
  });
  it('an oversized prompt ends gracefully; a conversation outgrowing the budget gets the flat penalty', async () => {
    const over = await runRollout(scripted(['x']), new EnvFromMessageEnv(renderer, new Echo(), { maxTrajectoryTokens: 2 }));
    expect(over.stopReason).toBe('max_tokens');
    expect(over.transitions[0].reward).toBe(-0.1);
    const first = await new EnvFromMessageEnv(renderer, new Echo()).initialObservation();
    const room = modelInputLength((first as { ob: Parameters<typeof modelInputLength>[0] }).ob) + 3;
    const grown = await runRollout(scripted(['a much longer reply than three tokens']), new EnvFromMessageEnv(renderer, new Echo(), { maxTrajectoryTokens: room }));
    expect(grown.transitions[0]).toMatchObject({ reward: -0.1, metrics: { context_overflow: 1, 'stop/context_overflow': 1, turn: 1 } });
  });
});

describe('guess the number', () => {
  it('feedback and rewards as the reference', () => {
    expect(guessFeedback('Guess: 12', 12)).toEqual({ text: 'Correct', reward: 1 });
    expect(guessFeedback('Guess: 3', 12)).toEqual({ text: 'Too low', reward: 0 });
    expect(guessFeedback('Guess:  1_000 ', 12)).toEqual({ text: 'Too high', reward: 0 });
    expect(guessFeedback('I think 12', 12)).toEqual({ text: GUESS_NUMBER_FAIL_TO_PARSE, reward: -1 });
    expect(guessFeedback('Guess: twelve', 12).reward).toBe(-1);
  });
  it('splits random.Random(0).sample(range(1024), 1024) at 921', () => {
    const { train, test } = guessNumberSplit(0.9);
    expect(train.slice(0, 8)).toEqual([788, 776, 911, 430, 41, 265, 988, 523]);
    expect(test.slice(0, 4)).toEqual([924, 389, 81, 284]);
    expect(test).toHaveLength(103);
  });
  it('an episode ends on the right guess, with the transcript in the logs', async () => {
    const t = await runRollout(scripted(['Guess: 500', 'Guess: 7', 'Guess: 9']), new GuessNumberEnv(9, renderer));
    expect(t.transitions.map((x) => x.reward)).toEqual([0, 0, 1]);
    expect(t.transitions.map((x) => x.logs.feedback)).toEqual(['Too high', 'Too low', 'Correct']);
    expect(t.transitions[2]).toMatchObject({ episodeDone: true, logs: { guess: 'Guess: 9', target: 9 } });
    const lost = await runRollout(scripted(['nope']), new GuessNumberEnv(9, renderer, 4));
    expect(lost.transitions.map((x) => x.reward)).toEqual([-1, -1, -1, -1]);
  });
});

describe('twenty questions', () => {
  it('shuffles the word list with random.Random(0) and holds out min(n // 5, 100)', () => {
    const words = loadWords(join(import.meta.dirname, '..', '..', '..', 'data', 'twenty_questions_nouns.txt'));
    expect(words).toHaveLength(171);
    const { train, test } = twentyQuestionsSplit(words, 2);
    expect(train.slice(0, 5)).toEqual(['garden', 'park', 'orange', 'zucchini', 'parent']);
    expect(test.slice(-3)).toEqual(['banana', 'nurse', 'lady']);
    expect(test).toHaveLength(34);
    expect(train).toHaveLength(2 * 137);
  });
  it('the answerer sees only its word and the last question; a correct guess wins', async () => {
    const seen: Message[][] = [];
    const answerer = async (m: Message[]) => {
      seen.push(m);
      return { role: 'assistant', content: 'no' } as Message;
    };
    const t = await runRollout(scripted(['Is it alive?', 'Guess: Apple']), new TwentyQuestionsEnv(answerer, 'apple', renderer));
    expect(t.transitions.map((x) => x.reward)).toEqual([0, 1]);
    expect(seen[1]).toHaveLength(2);
    expect(seen[1][0].content).toContain('Your secret word is apple.');
    expect(seen[1][1]).toEqual({ role: 'user', content: 'Guess: Apple' });
    expect(t.transitions[0].logs).toEqual({ player: 'Is it alive?', answerer: 'no' });
    expect(t.transitions[1].metrics).toEqual({ won: 1, turns: 2 });
    expect(twentyQuestionsReward('guess: apple', 'apple')).toBe(0);
  });
});

describe('tic-tac-toe self-play', () => {
  it('game rules, move parsing and minimax', () => {
    const g = new TicTacToeGame();
    for (const [p, m] of [[0, '[0]'], [1, '[3]'], [0, 'I take [1]'], [1, '[4]'], [0, '[2]']] as const) g.move(p, m);
    expect(g.done).toBe(true);
    expect([g.reward(0), g.reward(1)]).toEqual([1, -1]);
    const bad = new TicTacToeGame();
    bad.move(0, '[4]');
    bad.move(1, '[4]');
    expect([bad.reward(0), bad.reward(1)]).toEqual([0, -2]);
    expect(parseMove('no move')).toBeNull();
    expect(optimalMove(['O', 'O', null, 'X', 'X', null, null, null, null], 'O')).toBe(2);
    expect(optimalMove(['O', 'O', null, 'X', null, null, null, null, null], 'X')).toBe(2);
  });
  it('the two envs of a group play one game in turns, and a failed player releases the other', async () => {
    const envs = await new TicTacToeEnvGroupBuilder(renderer, true, 'optimal', 8).makeEnvs();
    const [x, o] = await Promise.all([runRollout(scripted(['[0]', '[1]', '[2]']), envs[0]), runRollout(scripted(['[3]', '[4]']), envs[1])]);
    expect(x.transitions.map((t) => t.reward)).toEqual([0, 0, 1]);
    expect(o.transitions.map((t) => t.reward)).toEqual([0, -1]);
    expect(x.transitions[2].metrics).toEqual({ win: 1, draw: 0, illegal_move: 0 });
    const [a, b] = await new TicTacToeEnvGroupBuilder(renderer, true, 'optimal', 8).makeEnvs();
    const failing: TokenCompleter = async () => {
      throw new Error('sampler down');
    };
    const { doSingleRollout } = await import('../../../src/cookbook/rl/rollouts.js');
    const results = await Promise.allSettled([doSingleRollout(failing, a), doSingleRollout(scripted(['[3]']), b)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled']);
  });
});

describe('rubric judge', () => {
  const rubric = RubricSchema.parse({ rubric_str: 'Says hello.' });
  it('parses the verdict like re.search(…, re.DOTALL) + float(); anything else scores 0.0', () => {
    expect(extractScore(rubric, 'ok <score>0.75</score>')).toBe(0.75);
    expect(extractScore(rubric, '<score>\n 1 \n</score>')).toBe(1);
    expect(extractScore(rubric, '<score>great</score>')).toBe(0);
    expect(extractScore(rubric, 'no verdict')).toBe(0);
    expect(extractScore({ ...rubric, extraction_regex: 'Score: (\\d+)' }, 'Score: 7')).toBe(7);
  });
  it('the grader prompt separates context from the completion', () => {
    const [m] = graderPrompt(rubric, [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello!' }]);
    expect(m.content).toContain('<context>\nHuman: Hi\n</context>');
    expect(m.content).toContain('<completion_to_grade>\nChatbot: Hello!\n</completion_to_grade>');
    expect(m.content).toMatch(/based on the rubric\. Please output your score between 0 and 1 wrapped in <score> \.\.\. <\/score>$/);
  });
  it('reward = 0.1·(format − 1) + mean rubric score, graders’ verdicts in the logs', async () => {
    const dp = { convo: [{ role: 'user', content: 'Greet me' }], rubric_items: [rubric, rubric] };
    const verdicts = ['<score>1</score>', '<score>0.5</score>'];
    const graders = verdicts.map((v) => async () => ({ role: 'assistant', content: v }) as Message);
    const t = await runRollout(scripted(['Hello']), new RubricGradedEnv(renderer, dp, graders));
    expect(t.transitions[0].reward).toBeCloseTo(0.75, 12);
    expect(t.transitions[0].metrics).toEqual({ format: 1, rubric_score: 0.75 });
    expect(t.transitions[0].logs).toMatchObject({ grader_0: '<score>1</score>', grader_1: '<score>0.5</score>', num_rubrics: 2 });
  });
  it('a bad datapoint is refused naming the file and line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rubric-'));
    const f = join(dir, 'r.jsonl');
    writeFileSync(f, '{"convo":[{"role":"user","content":"a"}],"rubric_items":[{"rubric_str":"x"}]}\n{"convo":[]}\n');
    expect(() => loadRubricDatapoints(f, 'r.jsonl')).toThrow(/^r\.jsonl:2: convo/);
  });
});

describe('registry', () => {
  it('ships the multi-turn envs; bad args name the config path', async () => {
    for (const name of ['guess_number', 'twenty_questions', 'tictactoe', 'rubric']) expect(registeredRLDataset(name), name).toBeDefined();
    const build = registeredRLDataset('guess_number')!;
    expect(() => build({ args: { batch_size: 0, train_group_size: 2 }, renderer, tokenizer: tok, modelName: 'tiny-llama3' })).toThrow(/dataset\.args\.batch_size/);
    const { train } = await build({ args: { batch_size: 2, train_group_size: 3 }, renderer, tokenizer: tok, modelName: 'tiny-llama3' });
    expect(train.length).toBe(460);
    expect(await train.getBatch(0)[0].makeEnvs()).toHaveLength(3);
    expect(() => registeredRLDataset('tictactoe')!({ args: { batch_size: 3, num_train_datapoints: 4, num_test_datapoints: 2 }, renderer, tokenizer: tok, modelName: 'x' })).toThrow(/dataset\.args\.batch_size/);
  });
});

describe('shipped configs', () => {
  for (const name of ['rl_guess_number', 'rl_twenty_questions', 'rl_tictactoe', 'rl_rubric']) {
    it(`configs/${name}.json resolves and builds its datasets`, async () => {
      const { RLConfigSchema } = await import('../../../src/cookbook/config/rl.js');
      const { buildRLDatasets } = await import('../../../src/cookbook/rl/datasets.js');
      const cfg = RLConfigSchema.parse(JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', '..', 'configs', `${name}.json`), 'utf8')));
      const { train } = await buildRLDatasets(cfg.dataset, cfg);
      expect(train.length).toBeGreaterThan(0);
      expect(train.getBatch(0).length).toBeGreaterThan(0);
    });
  }
});

describe('rollout context (side samplers)', () => {
  it('seeds each side sampler from (position…, episode, role, call) and opens one session per model', async () => {
    const { samplerRolloutContext, bindRollout } = await import('../../../src/cookbook/rl/rollout-context.js');
    const { deriveSeed, sequentialSeeds } = await import('../../../src/cookbook/rl/seeds.js');
    const opened: string[] = [];
    const seeds: number[] = [];
    const session = {
      sample: async (_p: unknown, _n: number, params: { seed: number }) => {
        seeds.push(params.seed);
        return { sequences: [{ tokens: tok.encode('yes\n\nUser:', { addSpecialTokens: false }), logprobs: null, stop_reason: 'stop' }] };
      },
    };
    const ctx = samplerRolloutContext({
      openSession: async (source) => {
        opened.push('baseModel' in source ? source.baseModel : source.modelPath);
        return session as never;
      },
      policyModel: { model_name: 'tiny-llama3', renderer_name: 'role_colon' },
      seeds: (...parts) => sequentialSeeds(7, 3, 1, 0, 99, ...parts),
    });
    const a = ctx.messageCompleter({ model: null, maxTokens: 3 }, 2, 0);
    const b = ctx.messageCompleter({ model: null, maxTokens: 3 }, 5, 1);
    expect(await a([{ role: 'user', content: 'q' }])).toEqual({ role: 'assistant', content: 'yes' });
    await b([{ role: 'user', content: 'q' }]);
    await a([{ role: 'user', content: 'q2' }]);
    expect(seeds).toEqual([deriveSeed(7, 3, 1, 0, 99, 2, 0, 0), deriveSeed(7, 3, 1, 0, 99, 5, 1, 0), deriveSeed(7, 3, 1, 0, 99, 2, 0, 1)]);
    expect(opened).toEqual(['tiny-llama3']);

    const limits = RolloutLimitsSchema.parse({ max_turns: 2 });
    const own = RolloutLimitsSchema.parse({ max_turns: 5 });
    const builder = new (class extends BaseEnvGroupBuilder {
      async makeEnvs() {
        return [new EndlessEnv(), Object.assign(new EndlessEnv(), { rolloutLimits: own })];
      }
    })();
    const envs = await bindRollout(builder, ctx, limits).makeEnvs();
    expect(envs.map((e) => e.rolloutLimits?.max_turns)).toEqual([2, 5]);
  });
});
