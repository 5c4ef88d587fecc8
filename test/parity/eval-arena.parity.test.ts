// Arena-Hard beside the reference's (tinker-cookbook 0.6.1 eval/benchmarks/_arena_hard.py, run at
// test time): the envs built from the shipped rows and from rows it skips, their ids, clusters and
// prompt messages; for each answer and judge reply the judge prompt, the rating read from the reply
// (brackets, "Rating: N" in any case, any script's digits, a judge that fails), the win; and the
// aggregate (win rate, mean rating / 10).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBenchmark } from '../../src/cookbook/eval/benchmark-data.js';
import { aggregateResults } from '../../src/cookbook/eval/benchmark-run.js';
import type { Judge } from '../../src/cookbook/eval/judge.js';
import { judgeRating } from '../../src/cookbook/eval/suites/arena-hard.js';
import { SUITES, type EvalItem, type ExampleResult, type Grade } from '../../src/cookbook/eval/suites/index.js';
import type { Message } from '../../src/cookbook/renderers/types.js';
import { actAlways } from '../../src/cookbook/rl/side-effects.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const REPO = join(import.meta.dirname, '..', '..');
const SHIPPED = readFileSync(join(REPO, 'data/eval/arena_hard/data/train-00000-of-00001.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
// Rows the reference skips (no turns, an empty question) and one whose cluster is null.
const ROWS = [
  ...SHIPPED,
  { question_id: 'x1', category: 'arena-hard-v0.1', cluster: 'Empty', turns: [] },
  { question_id: 'x2', category: 'arena-hard-v0.1', cluster: 'Blank', turns: [{ content: '' }] },
  { question_id: 'x3', category: 'arena-hard-v0.1', cluster: null, turns: [{ content: 'Explain {braces}, $1 and $& in one line.' }] },
];
const ANSWER = 'Sort by start, then sweep:\n```python\ndef merge(xs): ...\n```\nO(n log n). {question} $& $1 ünïcode';
const REPLIES: Array<string | null> = [
  'The answer is fine.\n\nRating: [[8]]',
  '[[7]]',
  '[[6]]',
  'Rating: 9',
  'rating:10',
  '[[10]] though a strict judge would say [[2]]',
  'Rating: [[3]] [[9]]',
  '[[٨]]',
  'RATİNG: 7',
  'Rating:\u001c7',
  'Rating:\ufeff7',
  '[[ 8 ]]',
  'no rating given',
  '[[007]]',
  null,
];
// Each reply to an answer on a row the reference keeps (four shipped rows, then the null-cluster one).
// A judge that fails is left out: the reference scores its sample 0, here the chunk is tried again
// (test/cookbook/eval/arena-hard.test.ts), so a crash mid-eval never changes a score.
const GRADES: Array<[number, string, string]> = REPLIES.flatMap((reply, i) => (reply === null ? [] : [[i % 5, i % 2 ? ANSWER : `answer ${i}`, reply] as [number, string, string]]));

let reference: {
  examples: Array<{ id: string; question: string; cluster: string; messages: Message[] }>;
  steps: Array<{ judge_messages: Message[]; reward: number; metrics: { correct: number; score: number }; score: number }>;
  ratings: Array<number | null>;
  aggregate: Record<string, number>;
};
let items: EvalItem[];
let dir: string;

/** A judge that answers `reply` (null: fails), recording what it is asked. */
function cannedJudge(reply: string | null, asked: Message[][]): Judge {
  return {
    name: 'canned',
    async ask(messages) {
      asked.push(messages);
      if (reply === null) throw new Error('judge unavailable');
      return reply;
    },
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'h56g-arena-parity-'));
  writeFileSync(join(dir, 'train.jsonl'), ROWS.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({ rows: ROWS, grades: GRADES, ratings: REPLIES.filter((r) => r !== null) });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'eval_arena_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
  items = (await loadBenchmark({ suite: 'arena_hard', data_path: join(dir, 'train.jsonl'), data_name: null, data_split: null, limit: null, system_prompt: null })).items;
}, 180_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('arena_hard beside the reference', () => {
  it('keeps the rows it keeps, with the same ids, clusters and prompt messages (no system prompt)', () => {
    expect(items.map((i) => ({ id: i.id, question: (i.target as { question: string }).question, cluster: i.group, messages: i.messages }))).toEqual(reference.examples);
    expect(items).toHaveLength(SHIPPED.length + 1);
  });

  it('reads the same rating from each judge reply', () => {
    expect(REPLIES.filter((r) => r !== null).map(judgeRating)).toEqual(reference.ratings);
  });

  it('sends the same judge prompt and scores each answer as the reference does', async () => {
    const grades: Grade[] = [];
    for (const [row, answer, reply] of GRADES) {
      const asked: Message[][] = [];
      grades.push(await SUITES.arena_hard.grade(answer, items[row], { message: null, once: actAlways, judge: cannedJudge(reply, asked) }));
      expect(asked).toEqual([reference.steps[grades.length - 1].judge_messages]);
    }
    expect(grades.map((g) => ({ reward: g.correct ? 1 : 0, rating: g.metrics?.rating, extracted: g.extracted }))).toEqual(
      reference.steps.map((s) => ({ reward: s.reward, rating: s.metrics.score, extracted: s.score === -1 ? '' : String(s.score) })),
    );
    // Wins: 8, 7, 9, 10, 10, 8 (٨), 7 (RATİNG), 7 (\x1c), 7 (007).
    expect(grades.filter((g) => g.correct).length).toBe(9);

    const results: ExampleResult[] = grades.map((g, i) => ({ index: i, id: items[GRADES[i][0]].id, prompt: '', response: GRADES[i][1], expected: '', extracted: g.extracted, correct: g.correct, metrics: g.metrics }));
    const metrics = aggregateResults(SUITES.arena_hard, results);
    const ref = reference.aggregate;
    expect({ score: metrics.score, num_correct: metrics.num_correct, num_examples: metrics.num_examples, win_rate: metrics.win_rate, avg_score: metrics.avg_score }).toEqual({
      score: ref.score,
      num_correct: ref.num_correct,
      num_examples: ref.num_examples,
      win_rate: ref['arena_hard/win_rate'],
      avg_score: ref['arena_hard/avg_score'],
    });
  });
});
