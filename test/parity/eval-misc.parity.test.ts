// LongBench v2, BFCL and IFBench beside the reference's benchmarks (tinker-cookbook 0.6.1, run at
// test time): on the shipped rows and edge rows, the prompt text, example id and expected answer;
// every response graded against every example (LongBench's extracted letter too); the aggregate
// metrics. IFBench's verdicts need its checker library, which no registry here serves: they are
// compared with committed goldens in test/cookbook/eval/misc-benchmarks.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { pickLimit } from '../../src/cookbook/eval/benchmark-data.js';
import { bfcl } from '../../src/cookbook/eval/suites/bfcl.js';
import { ifbench } from '../../src/cookbook/eval/suites/ifbench.js';
import { longbench } from '../../src/cookbook/eval/suites/longbench.js';
import type { EvalItem, ExampleResult, Suite } from '../../src/cookbook/eval/suites/types.js';
import { getTextContent } from '../../src/cookbook/renderers/content.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const REPO = join(import.meta.dirname, '..', '..');
const jsonl = (p: string) => readFileSync(join(REPO, p), 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>);

const LONGBENCH_ROWS: Array<Record<string, unknown>> = [
  ...(JSON.parse(readFileSync(join(REPO, 'data/eval/longbench/data.json'), 'utf8')) as Array<Record<string, unknown>>),
  { _id: 'e1', domain: 'Code Repository Understanding', question: 'Open question?', context: 'Some text about Zürich.', answer: 'zürich' },
  { _id: 'e2', domain: 'Long-dialogue History Understanding', question: 'Q2', context: 'ctx', choice_A: 'one', choice_B: '', choice_C: 'three', choice_D: 'four', answer: ' c ' },
  { _id: 'e3', dataset: 'legacy', input: 'Legacy input?', context: 'legacy ctx', answer: 'E', choice_A: 'x', choice_B: 'y' },
  { _id: 'e4', domain: 'Multi-Document QA', question: 'Which (if any)?', context: 'ctx', answer: 'C++ (2011)' },
];
/** The rows of one shape (the legacy `input` row left out), for the shuffled --limit. */
const LIMIT_ROWS = LONGBENCH_ROWS.filter((r) => 'question' in r);
const LONGBENCH_RESPONSES = [
  'The answer is B.', 'A or B? I pick (C)', 'Answer: D\n', 'éA and then B', 'Zürich', 'zürichsee', 'nothing here',
  `ANSWER: B${'x'.repeat(400)}`, `B${' '.repeat(300)}`, 'the letter is ₂A', 'c', 'It is C++ (2011).', 'A_B C', 'Ünd D',
];

const BFCL_FILE = 'data/eval/bfcl/BFCL_v3_simple.json';
const BFCL_ROWS: Array<Record<string, unknown>> = [
  ...jsonl(BFCL_FILE),
  { id: 'x1', question: [{ role: 'user', content: 'Weather in Paris for days 1-3?' }], function: [{ name: 'get_weather', description: 'Forecast, °C.', parameters: { type: 'dict', properties: { city: { type: 'string' }, days: { type: 'array' } } } }], ground_truth: { name: 'get_weather', arguments: { city: 'Paris', days: [1, 2, 3] } } },
  { id: 'x2', question: 'plain string query', function: 'get_weather(city)', ground_truth: '{"name": "get_weather", "arguments": {"city": "PARIS "}}' },
  { id: 'x3', question: [[{ role: 'user', content: 'It\'s "quoted" café\n\ttab' }], ["it's"]], function: [], ground_truth: [{ function: 'get_weather', parameters: { days: [3, 2, 1], flag: true } }] },
];
const BFCL_RESPONSES = [
  '{"name": "geometry.rectangle_area", "arguments": {"length": 12, "width": 7}}',
  '<tool_call>\n{"arguments": {"length": 12.0, "width": 7}}\n</tool_call>',
  'I think {"name": "convert_temperature", "arguments": {"value": 30, "from_scale": " Celsius ", "to_scale": "FAHRENHEIT"}}',
  '<think>{not json}</think>\n```json\n{"name": "get_weather", "arguments": {"city": "paris", "days": [3, 1, 2]}}\n```',
  '```\n[{"name": "places.opening_hours", "arguments": {"place": "le petit four", "city": "lyon"}}]\n```',
  '{"function": "get_weather", "parameters": {"city": "Paris", "days": [3, 1, 2], "flag": 1}}',
  '{"name": "get_weather", "arguments": {"city": "paris", "days": [1, 2, 3], "unit": true}}',
  'no call at all',
  '{"name": "GET_WEATHER ", "arguments": {"city": " Paris", "days": [true, 2, 3]}}',
  '{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2, 3]}',
  '{}',
];

const IFBENCH_ROWS: Array<Record<string, unknown>> = [
  ...jsonl('data/eval/ifbench/train.jsonl'),
  { key: 'k', prompt: 'Say it. Use at least 2 unique words.', instruction_id_list: ['count:unique_word_count', 'format:no_whitespace'], kwargs: ['{"N": 2, "options": null}', null] },
];
const IFBENCH_AGGREGATE = { rewards: [1, 0, 0, 1, 0], fractions: [1, 0.5, 0, 1, 1 / 3] };

type Reference = {
  longbench: {
    examples: Array<{ id: string; prompt: string; expected: string; subtask: string; is_mcq: boolean }>;
    grades: Array<Array<{ reward: number; logs: { extracted: string } }>>;
    limited: string[];
    aggregate: { score: number; num_correct: number; num_examples: number; metrics: Record<string, number> };
  };
  bfcl: { examples: Array<{ id: string; prompt: string; expected: unknown }>; grades: number[][] };
  ifbench: {
    examples: Array<{ id: string; prompt: string; ids: string[]; kwargs: Array<Record<string, unknown>> }>;
    aggregate: { score: number; num_correct: number; metrics: Record<string, number> };
  };
};
let reference: Reference;

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({
    longbench: { rows: LONGBENCH_ROWS, responses: LONGBENCH_RESPONSES, limit: 5, limit_rows: LIMIT_ROWS },
    bfcl: { rows: BFCL_ROWS, answers: jsonl('data/eval/bfcl/possible_answer/BFCL_v3_simple.json'), responses: BFCL_RESPONSES },
    ifbench: { rows: IFBENCH_ROWS, aggregate: IFBENCH_AGGREGATE },
  });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'eval_misc_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);

const parse = (suite: Suite, rows: Array<Record<string, unknown>>, at: (i: number) => string) => rows.map((row, i) => suite.parseRow(row, at(i), null));
const userText = (item: EvalItem) => getTextContent(item.messages[item.messages.length - 1]!);
const result = (item: EvalItem, index: number, correct: boolean, metrics?: Record<string, number>): ExampleResult => ({
  index, id: item.id, ...(item.group !== undefined ? { group: item.group } : {}), prompt: '', response: '', expected: '', extracted: '', correct, ...(metrics ? { metrics } : {}),
});

describe('LongBench v2 beside the reference', () => {
  const items = parse(longbench, LONGBENCH_ROWS, (i) => `row ${i + 1}`);

  it('the prompt, example id, expected answer and domain of every row', () => {
    expect(items.map((it) => ({ id: it.id, prompt: userText(it), expected: longbench.expected(it), subtask: it.group, is_mcq: (it.target as { mcq: boolean }).mcq }))).toEqual(reference.longbench.examples);
  });

  it('--limit picks the rows the reference picks (the HF shuffle with seed 42), in its order', () => {
    const limitItems = parse(longbench, LIMIT_ROWS, (i) => `row ${i + 1}`);
    expect(pickLimit(limitItems, 5, longbench.limitPick).map((it) => it.id)).toEqual(reference.longbench.limited);
    expect(reference.longbench.limited).not.toEqual(limitItems.slice(0, 5).map((it) => it.id));
  });

  it('every response graded against every row: the letter read and the verdict', async () => {
    const ours = await Promise.all(items.map((it) => Promise.all(LONGBENCH_RESPONSES.map(async (r) => await longbench.grade(r, it)))));
    expect(ours.map((row) => row.map((g) => ({ reward: g.correct ? 1 : 0, extracted: g.extracted })))).toEqual(reference.longbench.grades.map((row) => row.map((g) => ({ reward: g.reward, extracted: g.logs.extracted }))));
  });

  it('accuracy and accuracy per domain', async () => {
    const results = await Promise.all(LONGBENCH_RESPONSES.map(async (r, i) => {
      const item = items[i % items.length]!;
      return result(item, i, (await longbench.grade(r, item)).correct);
    }));
    const ref = reference.longbench.aggregate;
    const correct = results.filter((r) => r.correct).length;
    expect({ score: correct / results.length, num_correct: correct }).toEqual({ score: ref.score, num_correct: ref.num_correct });
    const refPerDomain = Object.fromEntries(Object.entries(ref.metrics).filter(([k]) => k !== 'longbench/accuracy').map(([k, v]) => [k.slice('longbench/'.length), v]));
    expect(longbench.aggregate!(results)).toEqual(refPerDomain);
  });
});

describe('BFCL beside the reference', () => {
  const items = parse(bfcl, BFCL_ROWS, (i) => `${join(REPO, BFCL_FILE)}:${i + 1}`);

  it('the prompt (functions as indented JSON, the query as the reference reads it), example id and expected call', () => {
    expect(items.map((it) => ({ id: it.id, prompt: userText(it), expected: it.target }))).toEqual(reference.bfcl.examples);
  });

  it('every response graded against every row, on the raw text', async () => {
    const ours = await Promise.all(items.map((it) => Promise.all(BFCL_RESPONSES.map(async (r) => ((await bfcl.grade(r, it)).correct ? 1 : 0)))));
    expect(ours).toEqual(reference.bfcl.grades);
  });
});

describe('IFBench beside the reference', () => {
  const items = parse(ifbench, IFBENCH_ROWS, (i) => `row ${i + 1}`);

  it('the prompt, example id, instruction ids and kwargs (nulls dropped, JSON text parsed)', () => {
    expect(items.map((it) => {
      const { instructions } = it.target as { instructions: Array<{ id: string; kwargs: Record<string, unknown> }> };
      return { id: it.id, prompt: userText(it), ids: instructions.map((i) => i.id), kwargs: instructions.map((i) => i.kwargs) };
    })).toEqual(reference.ifbench.examples.map((e) => ({ ...e, kwargs: e.kwargs.map((k) => Object.fromEntries(Object.entries(k).filter(([, v]) => v !== null))) })));
  });

  it('strict accuracy (the score) and loose accuracy (the mean share followed)', () => {
    const results = IFBENCH_AGGREGATE.rewards.map((r, i) => result(items[0]!, i, r > 0, { fraction: IFBENCH_AGGREGATE.fractions[i]! }));
    const ref = reference.ifbench.aggregate;
    expect(ifbench.aggregate!(results)).toEqual({ strict_accuracy: ref.metrics['ifbench/strict_accuracy'], loose_accuracy: ref.metrics['ifbench/loose_accuracy'] });
    expect(ref.score).toBe(ref.metrics['ifbench/strict_accuracy']);
  });
});
