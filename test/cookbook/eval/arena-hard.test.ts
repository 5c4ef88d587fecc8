// Arena-Hard's judge: each sample's judge call happens once, recorded in the eval run's store, so
// grading again (a retried chunk) reads the reply back; a judge that fails scores the sample as
// unrated and leaves nothing recorded, so a retry asks again. The `judge` config belongs to judged
// suites and says what is missing; the in-training evaluator refuses a judged suite.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BenchmarkEvaluatorSchema, EvalConfigSchema } from '../../../src/cookbook/eval/benchmark-config.js';
import { loadBenchmark } from '../../../src/cookbook/eval/benchmark-data.js';
import { JudgeConfigSchema, openAIJudge, type Judge } from '../../../src/cookbook/eval/judge.js';
import { arenaHard } from '../../../src/cookbook/eval/suites/arena-hard.js';
import { ConfigurationError, DataFormatError } from '../../../src/cookbook/errors.js';
import { runStoreOnce } from '../../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../../src/cookbook/run-store.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function freshStore(): RunStore {
  const d = mkdtempSync(join(tmpdir(), 'h56g-arena-'));
  dirs.push(d);
  return new RunStore(d);
}

/** A judge that rates by the answer's length, counting the calls (failing while `down`). */
function countingJudge(name = 'counting'): Judge & { calls: number; down: boolean } {
  const judge = {
    name,
    calls: 0,
    down: false,
    async ask(messages: Array<{ content: unknown }>) {
      judge.calls++;
      if (judge.down) throw new Error('judge unavailable');
      return `Long enough. Rating: [[${String(messages[0].content).includes('a long, careful answer') ? 9 : 4}]]`;
    },
  };
  return judge;
}

const items = async () => (await loadBenchmark({ suite: 'arena_hard', data_path: null, data_name: null, data_split: null, limit: null, system_prompt: null })).items;

describe('arena_hard judge calls', () => {
  it('asks the judge once per (example, sample): grading again through the same store reads the replies back', async () => {
    const [first, second] = await items();
    const store = freshStore();
    const judge = countingJudge();
    const grade = (response: string, item: typeof first, index: number, sample: number, j: Judge = judge) =>
      arenaHard.grade(response, item, { message: null, once: runStoreOnce(store, ['eval', index, sample]), judge: j });

    const graded = [await grade('a long, careful answer', first, 0, 0), await grade('short', first, 0, 1), await grade('short', second, 1, 0)];
    expect(graded.map((g) => [g.correct, g.extracted, g.metrics])).toEqual([
      [true, '9', { rating: 9 }],
      [false, '4', { rating: 4 }],
      [false, '4', { rating: 4 }],
    ]);
    expect(judge.calls).toBe(3);
    // The retried chunk: the same samples, the judge not asked again.
    const again = [await grade('a long, careful answer', first, 0, 0), await grade('short', first, 0, 1), await grade('short', second, 1, 0)];
    expect(again).toEqual(graded);
    expect(judge.calls).toBe(3);
    expect(readdirSync(join(store.logPath, '.cookbook', 'store', 'side_effects')).sort()).toEqual(['eval_0_0', 'eval_0_1', 'eval_1_0']);
    // Another answer under a recorded key, or another judge, asks anew.
    expect((await grade('a long, careful answer', first, 0, 1)).correct).toBe(true);
    expect(judge.calls).toBe(4);
    const other = countingJudge('another judge');
    await grade('short', second, 1, 0, other);
    expect(other.calls).toBe(1);
  });

  it('a failing judge fails the grade and records nothing, so the retried chunk asks again (a crash never changes a score)', async () => {
    const [item] = await items();
    const store = freshStore();
    const judge = countingJudge();
    judge.down = true;
    const grade = () => arenaHard.grade('a long, careful answer', item, { message: null, once: runStoreOnce(store, ['eval', 0, 0]), judge });
    await expect(grade()).rejects.toThrow(`arena_hard judge (counting) failed on ${item.id}: judge unavailable`);
    expect(existsSync(join(store.logPath, '.cookbook', 'store', 'side_effects'))).toBe(false);
    judge.down = false;
    expect((await grade()).correct).toBe(true);
    expect(judge.calls).toBe(2);
  });

  it('without a judge, grading says where one comes from', async () => {
    const [item] = await items();
    await expect(arenaHard.grade('answer', item)).rejects.toThrow(new ConfigurationError('arena_hard grades with a judge model: run it through `cookbook eval` (the eval config’s `judge`)'));
  });

  it('refuses rows it cannot read, naming them', () => {
    expect(() => arenaHard.parseRow({ turns: 'q' }, 'rows.jsonl:2', null)).toThrow(new DataFormatError('rows.jsonl:2: "turns" must be a list of {"content": …} turns'));
    expect(() => arenaHard.parseRow({ turns: [{ content: 3 }] }, 'rows.jsonl:5', null)).toThrow(new DataFormatError('rows.jsonl:5: turns[0].content must be a string'));
    expect(arenaHard.include!({ turns: [{ content: 3 }] })).toBe(true);
    expect(arenaHard.include!({ turns: [] })).toBe(false);
    expect(arenaHard.parseRow({ turns: ['plain question'] }, 'r:1', 'ignored system prompt')).toMatchObject({ messages: [{ role: 'user', content: 'plain question' }], group: 'unknown' });
  });
});

describe('judge config', () => {
  const evalCfg = (extra: Record<string, unknown>) => EvalConfigSchema.safeParse({ model: 'tiny-qwen3', ...extra });
  const firstIssue = (r: ReturnType<typeof evalCfg>) => (r.success ? null : { path: r.error.issues[0].path.join('.'), message: r.error.issues[0].message });

  it('belongs to judged suites; without one the evaluated model judges (at the reference’s 4096 tokens, temperature 0)', () => {
    expect(firstIssue(evalCfg({ suite: 'gsm8k', judge: { model: 'tiny-qwen3' } }))).toEqual({ path: 'judge', message: 'judge settings are for judged suites (arena_hard, tau2_bench), not gsm8k' });
    const ok = evalCfg({ suite: 'arena_hard' });
    expect(ok.success && ok.data.judge).toBe(undefined);
    expect(JudgeConfigSchema.parse({})).toEqual({ api: 'tinker', model: null, base_url: null, api_key_env: null, renderer_name: null, max_tokens: 4096, temperature: 0 });
  });

  it('an OpenAI-compatible judge needs its endpoint and model; a key env var only goes with it', () => {
    expect(firstIssue(evalCfg({ suite: 'arena_hard', judge: { api: 'openai', model: 'gpt-4.1' } }))).toEqual({ path: 'judge.base_url', message: 'an OpenAI-compatible judge needs its base_url (e.g. https://api.openai.com/v1)' });
    expect(firstIssue(evalCfg({ suite: 'arena_hard', judge: { api: 'openai', base_url: 'http://x/v1' } }))).toEqual({ path: 'judge.model', message: 'an OpenAI-compatible judge needs its model name' });
    expect(firstIssue(evalCfg({ suite: 'arena_hard', judge: { api_key_env: 'OPENAI_API_KEY' } }))?.path).toBe('judge.api_key_env');
    expect(firstIssue(evalCfg({ suite: 'arena_hard', judge: { api: 'openai', base_url: 'http://x/v1', model: 'm', api_key_env: 'not a name' } }))?.path).toBe('judge.api_key_env');
    const judge = JudgeConfigSchema.parse({ api: 'openai', base_url: 'http://127.0.0.1:9/v1', model: 'm', api_key_env: 'H56G_UNSET_KEY' });
    expect(() => openAIJudge(judge, {})).toThrow(new ConfigurationError("judge.api_key_env: the environment variable H56G_UNSET_KEY is not set (the worker's environment)"));
  });

  it('the in-training benchmark evaluator takes arena_hard with a judge (or none: the snapshot judges itself), and refuses a judge elsewhere', () => {
    const self = BenchmarkEvaluatorSchema.safeParse({ kind: 'benchmark', suite: 'arena_hard' });
    expect(self.success && self.data.judge).toBe(undefined);
    const judged = BenchmarkEvaluatorSchema.safeParse({ kind: 'benchmark', suite: 'arena_hard', judge: { api: 'openai', base_url: 'http://x/v1', model: 'm' } });
    expect(judged.success && judged.data.judge).toEqual({ api: 'openai', base_url: 'http://x/v1', model: 'm', api_key_env: null, renderer_name: null, max_tokens: 4096, temperature: 0 });
    const half = BenchmarkEvaluatorSchema.safeParse({ kind: 'benchmark', suite: 'arena_hard', judge: { api: 'openai', model: 'm' } });
    expect(half.success ? null : half.error.issues[0].path.join('.')).toBe('judge.base_url');
    const misplaced = BenchmarkEvaluatorSchema.safeParse({ kind: 'benchmark', suite: 'gsm8k', judge: { model: 'tiny-qwen3' } });
    expect(misplaced.success ? null : { path: misplaced.error.issues[0].path.join('.'), message: misplaced.error.issues[0].message }).toEqual({ path: 'judge', message: 'judge settings are for judged suites (arena_hard, tau2_bench), not gsm8k' });
  });
});
