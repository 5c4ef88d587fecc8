// The multiple-choice suites (gpqa, mmlu_pro, mmlu_redux, supergpqa, ceval) beside the reference's
// benchmarks (tinker-cookbook 0.6.1, run at test time on the same rows, its dataset loader replaced
// by one serving them): the dataset id, config and split each asks for; which examples `limit`
// picks, in which order; each example's id, prompt messages and expected letter; the extracted
// letter and reward for the same responses; and the aggregate. The rows are the shipped samples
// plus edge rows (other column layouts, lowercase letters, empty choices, missing ids).
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBenchmark, samplesDir, suiteNamed } from '../../src/cookbook/eval/benchmark-data.js';
import { aggregateResults } from '../../src/cookbook/eval/benchmark-run.js';
import { extractMcqAnswer } from '../../src/cookbook/eval/suites/extract.js';
import { NO_EFFECTS, type EvalItem, type ExampleResult } from '../../src/cookbook/eval/suites/index.js';
import { HfSourceSchema } from '../../src/cookbook/hf/config.js';
import { readRows } from '../../src/cookbook/hf/readers.js';
import { splitFiles } from '../../src/cookbook/hf/source.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

type Row = Record<string, unknown>;

const RESPONSES = [
  'The answer is (A).',
  '\\boxed{c}',
  'After thinking it over, I pick B.',
  'answer: e',
  '',
  'Final answer: \\boxed{ J }',
  'The ANSWER IS (k) obviously; so D',
  "Between A and C, I'd go with C",
  '答案是 B',
  `D ${'x'.repeat(400)} no letter here`,
  `${'y'.repeat(400)} so the pick is (G)`,
  '\\boxed{\\text{B}} and the answer is A',
  'É A_ 1B',
];

const EXTRACT: Array<[string, string]> = [
  ['I choose (F)', 'ABCDEFGHIJ'],
  ['I choose (F)', 'ABCD'],
  ['éA A_ B1 (C)', 'ABCD'],
  ['answer:(b)', 'ABCDE'],
  ['\\boxed{E}', 'ABCD'],
  ['\\boxed{ e }', 'ABCDE'],
  ['nothing', 'ABCD'],
];

/** Rows the shipped samples do not have, in each dataset's layout: config → file → rows. */
const EDGE: Record<string, Record<string, Row[]>> = {
  gpqa: {
    'gpqa_diamond/train-00000-of-00001.jsonl': [
      { Question: 'Letter answer, columns out of order?', 'Choice C': 'third', 'Choice A': 'first', 'Choice B': 'second', 'Choice D': 'fourth', Answer: 'C' },
      { Question: 'Text answer with spaces?', 'Choice C': 'third', 'Choice A': 'first', 'Choice B': ' second ', 'Choice D': 'fourth', Answer: 'second  ' },
      { Question: 'An empty choice shifts the letters?', 'Choice C': 'third', 'Choice A': '', 'Choice B': 'second', 'Choice D': 'fourth', Answer: 'fourth' },
    ],
  },
  mmlu_pro: {
    'data/test-00000-of-00001.jsonl': [
      { question: 'No id, a lowercase letter answer?', options: ['one', 'two', 'three', 'four', 'five'], answer: 'd' },
      { question: 'No options at all?', options: [], answer: 'B' },
    ],
  },
  mmlu_redux: {
    'formal_logic/test-00000-of-00001.jsonl': [
      { question: 'No error_type column, answer as digits?', choices: ['p', 'q', 'r', 's'], answer: '3' },
      { question: 'Another row without error_type?', choices: ['p', 'q', 'r', 's'], answer: '0' },
    ],
    'philosophy/test-00000-of-00001.jsonl': [
      { question: 'Flagged bad?', choices: ['p', 'q', 'r', 's'], answer: 1, error_type: 'bad_question_clarity' },
      { question: 'Fine one?', choices: ['p', 'q', 'r', 's'], answer: 2, error_type: 'ok' },
    ],
  },
  supergpqa: {
    'SuperGPQA-all.jsonl': [
      { question: 'No uuid, five options, a padded lowercase letter?', options: ['a1', 'a2', 'a3', 'a4', 'a5'], answer_letter: ' e ', discipline: 'Science' },
      { question: 'Ten options?', options: ['o0', 'o1', 'o2', 'o3', 'o4', 'o5', 'o6', 'o7', 'o8', 'o9'], answer_letter: 'J', discipline: '' },
    ],
  },
  ceval: {
    'law/val-00000-of-00001.jsonl': [
      { id: 0, question: '选项 D 为空？', A: '甲', B: '乙', C: '丙', D: '', answer: ' b' },
      { id: 1, question: '选项 A 为空？', A: '', B: '乙', C: '丙', D: '丁', answer: 'C' },
    ],
  },
};

const SUITES = ['gpqa', 'mmlu_pro', 'mmlu_redux', 'supergpqa', 'ceval'] as const;
const LIMITS = [null, 2, 10];
const SYSTEM = 'You are a careful examiner.';

interface Case {
  suite: string;
  label: string;
  dataPath: string | null;
  systemPrompt: string | null;
  rows: Record<string, Row[]>;
  items: Map<number | null, EvalItem[]>;
}

interface RefRun {
  limit: number | null;
  calls: Array<[string, string | null, string]>;
  examples: Array<{ id: string; messages: unknown[]; expected: string; graded: Array<{ reward: number; extracted: string }> }>;
  aggregate: { score: number; num_correct: number; num_examples: number; metrics: Record<string, number> } | null;
}

/** The response example `j` is aggregated on: right, right boxed, wrong, or nothing, in turn. */
function assigned(item: EvalItem, j: number): string {
  const letter = (item.target as { letter: string }).letter;
  return [`The answer is (${letter})`, `\\boxed{${letter}}`, 'The answer is (A)', 'no idea'][j % 4];
}

/** Rows of each config of a dataset folder, as the loader reads them. */
async function rowsByConfig(dir: string, suite: string): Promise<Record<string, Row[]>> {
  const s = suiteNamed(suite);
  const out: Record<string, Row[]> = {};
  for (const config of s.dataset.configs ?? [s.dataset.name]) {
    let files;
    try {
      files = await splitFiles(HfSourceSchema.parse({ path: dir, name: config, split: s.dataset.split }), s.dataset.split);
    } catch {
      continue;
    }
    const rows: Row[] = [];
    for (const f of files) for await (const r of readRows(f)) rows.push(r.data);
    out[config ?? 'default'] = rows;
  }
  return out;
}

const tmp = mkdtempSync(join(tmpdir(), 'h56b-parity-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const cases: Case[] = [];
let reference: { suites: Array<{ name: string; runs: RefRun[] }>; extract: string[] };

beforeAll(async () => {
  for (const suite of SUITES) {
    const edgeDir = join(tmp, suite);
    for (const [file, rows] of Object.entries(EDGE[suite])) {
      mkdirSync(join(edgeDir, file, '..'), { recursive: true });
      writeFileSync(join(edgeDir, file), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    }
    for (const [label, dataPath, systemPrompt] of [['shipped', null, null], ['edge', edgeDir, SYSTEM]] as const) {
      const items = new Map<number | null, EvalItem[]>();
      for (const limit of LIMITS) {
        items.set(limit, (await loadBenchmark({ suite, data_path: dataPath, data_name: null, data_split: null, limit, system_prompt: systemPrompt })).items);
      }
      cases.push({ suite, label, dataPath, systemPrompt, rows: await rowsByConfig(dataPath ?? join(samplesDir(), suiteNamed(suite).sample), suite), items });
    }
  }
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({
    suites: cases.map((c) => ({ name: c.suite, rows: c.rows, limits: LIMITS, responses: RESPONSES, system_prompt: c.systemPrompt, assigned: c.items.get(null)!.map(assigned) })),
    extract: EXTRACT,
  });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'eval_choice_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 180_000);

describe('multiple-choice suites beside the reference', () => {
  it('the dataset id, config(s) and split each loads', () => {
    cases.forEach((c, i) => {
      const s = suiteNamed(c.suite).dataset;
      for (const run of reference.suites[i].runs) expect(run.calls, c.suite).toEqual((s.configs ?? [s.name]).map((config) => [s.hubId, config, s.split]));
    });
  });

  it('the same examples for each limit, in the same order: ids, prompt messages, expected letters', () => {
    cases.forEach((c, i) => {
      for (const run of reference.suites[i].runs) {
        const ours = c.items.get(run.limit)!;
        const where = `${c.suite} ${c.label} limit ${run.limit}`;
        expect(ours.map((it) => it.id), where).toEqual(run.examples.map((e) => e.id));
        expect(ours.map((it) => it.messages), where).toEqual(run.examples.map((e) => e.messages));
        expect(ours.map((it) => suiteNamed(c.suite).expected(it)), where).toEqual(run.examples.map((e) => e.expected));
      }
    });
  });

  it('the same extracted letter and reward for every response', async () => {
    for (const [i, c] of cases.entries()) {
      const suite = suiteNamed(c.suite);
      const run = reference.suites[i].runs[0];
      for (const [j, item] of c.items.get(null)!.entries()) {
        const ours = await Promise.all(RESPONSES.map(async (r) => suite.grade(r, item, NO_EFFECTS)));
        expect(ours.map((g) => ({ reward: g.correct ? 1 : 0, extracted: g.extracted })), `${c.suite} ${c.label} example ${j}`).toEqual(run.examples[j].graded);
      }
    }
    expect(EXTRACT.map(([t, l]) => extractMcqAnswer(t, l))).toEqual(reference.extract);
  });

  it('the same aggregate: score, counts, and the per-subject accuracy of MMLU-Redux', async () => {
    for (const [i, c] of cases.entries()) {
      const suite = suiteNamed(c.suite);
      const items = c.items.get(null)!;
      const results: ExampleResult[] = await Promise.all(
        items.map(async (item, j) => {
          const response = assigned(item, j);
          const g = await suite.grade(response, item, NO_EFFECTS);
          return { index: j, id: item.id, ...(item.group !== undefined ? { group: item.group } : {}), prompt: '', response, expected: suite.expected(item), extracted: g.extracted, correct: g.correct };
        }),
      );
      const ours = aggregateResults(suite, results);
      const ref = reference.suites[i].runs[0].aggregate!;
      const where = `${c.suite} ${c.label}`;
      expect({ score: ours.score, num_correct: ours.num_correct, num_examples: ours.num_examples }, where).toEqual({ score: ref.score, num_correct: ref.num_correct, num_examples: ref.num_examples });
      // The reference names its metrics `<benchmark>/…` and repeats the score as `<benchmark>/accuracy`.
      const prefix = `${c.suite}/`;
      const refMetrics = Object.fromEntries(Object.entries(ref.metrics).filter(([k]) => k !== `${prefix}accuracy`).map(([k, v]) => [k.slice(prefix.length), v]));
      if (`${prefix}accuracy` in ref.metrics) expect(ours.score, where).toBe(ref.metrics[`${prefix}accuracy`]);
      // score_stderr is ours alone (the reference reports no standard error).
      const { score: _s, num_correct: _n, num_examples: _e, score_stderr: _se, ...extra } = ours;
      expect(extra, where).toEqual(refMetrics);
    }
    // The breakdown really breaks down: one accuracy per subject of the shipped sample.
    const redux = reference.suites[cases.findIndex((c) => c.suite === 'mmlu_redux')].runs[0].aggregate!.metrics;
    expect(Object.keys(redux).sort()).toEqual(['mmlu_redux/accuracy', 'mmlu_redux/astronomy/accuracy', 'mmlu_redux/machine_learning/accuracy', 'mmlu_redux/virology/accuracy']);
  });
});
