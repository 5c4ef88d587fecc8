// The forecasting recipe beside the reference's (tinker-cookbook 0.6.1 recipes/forecasting, run at
// test time through forecasting_cases.py): the answer parser on tricky strings, the score and the
// Brier reward, the datetime and cell parsers, the loader and the temporal split (the shipped set,
// hand-written CSVs with quirks and faults), the prompts, the logging tags, ROC AUC, the dataset's
// batches, and whole evaluated groups (the env's step on the same action tokens, its group
// rewards, the evaluator's metrics with AUC).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PyFloat } from '../../src/cookbook/pyjson.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import { computeTrajectoryMetrics } from '../../src/cookbook/rl/metrics.js';
import { loadProphetArenaExamples, loadProphetArenaSplit, type ForecastExample } from '../../src/cookbook/rl/envs/forecasting/data.js';
import { ForecastEnv, ForecastGroupBuilder, ForecastRLDataset, forecastAucMetrics, rocAuc } from '../../src/cookbook/rl/envs/forecasting/env.js';
import { parseUtcDatetime } from '../../src/cookbook/rl/envs/forecasting/iso-datetime.js';
import { brierReward, parseForecast, renderPrompt, scoreForecast } from '../../src/cookbook/rl/envs/forecasting/prompt.js';
import { OtherPyValue, parseStructured, PyDict, type PyValue } from '../../src/cookbook/rl/envs/forecasting/structured.js';
import { tokensWithLogprobs, TrajectoryGroup, type Trajectory } from '../../src/cookbook/rl/types.js';
import { InitialObservationOverflow } from '../../src/cookbook/rl/types.js';
import { getTokenizer, shippedTokenizerDir } from '../../src/cookbook/tokenizer.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { outcome, runPythonScript, type Outcome } from './reference.js';

const REPO = join(import.meta.dirname, '..', '..');
const SHIPPED = join(REPO, 'data/forecasting/questions.csv');

const RESPONSES = [
  '0.7', '0.70', '.3', '1', '0', '1.0', '1.5', '-0.2', '-0', '+0.4', '70%', '70 %', '150%', '0.5%', '1e-1', '1E-1', '5e-1', '1e400', '1e-400',
  '0.7.', '0.7!', '0.7!!', '0.7?', '**0.7**', '__0.7__', '*0.7*', '***0.7***', '_0.7*', 'Final answer: 0.7', 'final forecast = 0.35', 'FINAL ANSWER:0.8',
  'Answer: 0.2', 'Forecast: 45%', 'Probability: 0.6', 'Probability of YES: 0.6', 'probability  of   yes=0.6', 'Probability of no: 0.6', 'The answer is 0.7',
  '**Final answer:** 0.7', '**Final answer: 0.7**', 'Final answer: **0.7**.', 'Reasoning...\n\nFinal answer: 0.62', '0.7\nI think', '0.7\n\n  \n', '\n\n', '', '   ',
  'abc', '0.7 0.8', '0,7', '1/2', '0.7\r\n', 'Thoughts\r0.4', 'x\u20280.4', 'x\u20290.4', 'x\x850.4', 'x\x0b0.4', 'x\x0c0.4', 'x\x1c0.25', 'x\x1d0.25', 'x\x1e0.25', 'x\x1f0.25',
  '\u00a00.3\u3000', '\ufeff0.3', '0.3\ufeff', '\u200b0.3', '٠.٧', '０.５', '𝟎.𝟗', '߀.߅', 'fınal answer: 0.3', 'FİNAL ANSWER: 0.3', 'anſwer: 0.3', 'ANSWER: 0.3', 'Answer: 0.3',
  '0.0078125', '0.5', '50%', '.5e0', '5.', '5.e-1', '0.700000000000000001', '1.0000000000000001', 'final  answer : 0.9', 'final\tanswer:\t0.9', 'answer 0.9', 'Answer:',
  '0.7%%', '%0.7', '0.7 %**', '**0.7%**', '0.7 .', '0.7. ', 'final answer: 0.7\n**Note**', 'Final answer:\n0.7', 'final answer final answer: 0.7', 'probability of yes of yes: 0.2',
  '0.1e1', '1e0', '100%', '100.0001%', '0e5', '00.5', '0.5e', '0.5e+', 'e5', '.', '.%', '+.5', '-.0', '−0.5', '0.５',
];

const SCORES: Array<[number | null, number]> = [
  [null, 0], [null, 1], [0.5, 1], [0.5, 0], [0.7, 1], [0.7, 0], [0.3, 1], [0, 0], [1, 1], [-0, 0], [0.51, 1], [0.49, 0], [0.0078125, 1],
];
const BRIER: Array<[number, number]> = [[0.7, 1], [0.5, 0], [1.5, 1], [-0.1, 0], [0.3, 2], [1, 0], [0, 0]];

const DATETIMES = [
  '2025-07-08T12:01:09.330143+00:00', '2025-07-08', '20250708', '2025-07-08 12:01', '2025-07-08T12', '2025-07-08T24:00', '2025-07-08T12:01:09.1234567',
  '2025-07-08T12:01:09,5', '2025-07-08T12:01+05:30', '2025-07-08T12:01-0530', '2025-07-08T12:01+05', '2025-07-08T12:01+05:30:15.5', '2025-W28-2', '2025W282',
  '2025-W28', '2025-07-08é12:00', '２０２５-07-08', '2025-7-8', '2025-07-08T1201', '2025-07-08T12:0109', '2025-07-08T12:01:60', '2025-07-08T12:01+24:00',
  '2025-07-08T12:01+23:59', '2025-07-08T12:01:09.', '0001-01-01T00:00-01:00', '2025-07-08T12:01:09.123abc', '2025-07-08T12:01:09 ', '2025-07-08T',
  '2025-10-20', '2025-10-20T00:00:00Z', '2025-10-19T23:59:59.999999-00:01', '2025-10-20T05:30:00+05:30', '2024-02-29T12:00', '2023-02-29', '2025-13-01',
  '2025-W53-1', '2020-W53-7', '2026-W53-1', '2025-07-08T12:01:09.330143Z', '2025-07-08T12:01:09.330143ZZ', '9999-12-31T23:59:59-01:00', '0001-01-01T00:00+01:00',
  'garbage', '2025-07-08T12:01:09+05:30:15', '2025-07-08T12:01:09+0530', '2025-07-08T12:01:09+05:3', '2025-07-08T12:01:09-', 'Z025-07-08',
  '2025-07-08T12:01:09.330143+00:00Z', '2025-07-08T12:01:09.000000+00:00', '2025-07-08T12:01:09.5+00:00', '2025-07-08T00:00:00-23:59', '2025-07-08T12:01:09.1234567+01:00',
];

const STRUCTURED = [
  '["a", "b"]', "['a', 'b']", '{"a": 1, "b": 0}', "{'a': 1, 'b': 0.0}", "{'a': True}", '{"a": true}', '[1, 2.0, -3, +4, 1e3, 0x1f, 1_000, 0o17, 0b101, 1.5e-3, 10.]',
  '[NaN, Infinity, -Infinity]', '(1, 2)', '(1)', '("a",)', '()', '{1, 2}', 'set()', "{1: 0, 'a': 1}", "b'x'", "'a' 'b'", "u'x'", "r'\\n'", "'\\x41\\u00e9\\101\\q'", "'\\N'",
  "'''tri\nple'''", '"\\ud83d\\ude00"', '[1,]', '{"a": [1, {"b": null}]}', 'None', '[None, True, False]', '1j', '[--1]', '007', '[0, 00]', '"a"', "{'a': [1]}",
  '{[1]: 2}', '[1, 2', '{"a": 1, "a": 2}', "{'a': 1, 'a': 2}", '[1 2]', "{'a' 1}", '[true]', "['x' # c\n, 'y']", "f'x'", "'a' b'b'", '{"a": 1} x', '[-1.5, -0.0]',
  "[{'title': 't', 'summary': 's', 'ranking': 2.0}]",
];

const CATEGORIES = ['Sports', 'Science and Technology', 'ßtraße Σ', 'İstanbul  Two', 'Ꭰꭰ', 'ΐ', 'ﬁnance'];
const AUC: Array<Array<[number, number]>> = [
  [[0.1, 0], [0.4, 1], [0.35, 0], [0.8, 1]],
  [[0.5, 1], [0.5, 0], [0.5, 1], [0.2, 0], [0.2, 1], [0.9, 0]],
  [[0.3, 1]],
  [],
  [[0.7, 1], [0.7, 0]],
];
const DATASETS = [
  { batch_size: 16, group_size: 4, epochs: 3 },
  { batch_size: 7, group_size: 2, epochs: 1 },
  { batch_size: 100, group_size: 1, epochs: 2 },
];

/** Hand-written CSVs: the reference reads each; ours must keep or refuse the same ones. */
const HEADER = 'submission_id,event_ticker,title,snapshot_time,close_time,market_outcome,category,markets,sources';
const SRC = '"[{""title"": ""T"", ""summary"": ""S""}]"';
const row = (over: Partial<Record<'id' | 'ticker' | 'title' | 'snap' | 'close' | 'outcome' | 'category' | 'markets' | 'sources', string>> = {}) =>
  [
    over.id ?? 's1',
    over.ticker ?? 'EV1',
    over.title ?? 'Event one',
    over.snap ?? '2025-09-01T00:00:00Z',
    over.close ?? '2025-09-05T00:00:00Z',
    over.outcome ?? '"{""A"": 1, ""B"": 0}"',
    over.category ?? 'Sports',
    over.markets ?? '"[""A"", ""B""]"',
    over.sources ?? SRC,
  ].join(',');
const CSV_FILES: Record<string, string | Buffer> = {
  valid: `${HEADER}\n${row()}\n${row({ id: 's2', ticker: 'EV2', snap: '2025-08-01', markets: `"['Yes']"`, outcome: `"{'Yes': 1.0}"` })}\n`,
  bom: `\ufeff${HEADER}\n${row()}\n`,
  missing_column: `${HEADER.replace(',sources', '')}\n${row().replace(/,"\[\{.*$/, '')}\n`,
  short_row: `${HEADER}\n${row().split(',').slice(0, 7).join(',')}\n`,
  extra_cells: `${HEADER}\n${row()},extra,more\n`,
  markets_not_list: `${HEADER}\n${row({ markets: '"""A"""' })}\n`,
  markets_tuple: `${HEADER}\n${row({ markets: `"('A', 'B')"` })}\n`,
  markets_blank_name: `${HEADER}\n${row({ markets: '"[""A"", "" ""]"', outcome: '"{""A"": 1, "" "": 0}"' })}\n`,
  outcome_keys_disagree: `${HEADER}\n${row({ outcome: '"{""A"": 1, ""C"": 0}"' })}\n`,
  outcome_two: `${HEADER}\n${row({ outcome: '"{""A"": 2, ""B"": 0}"' })}\n`,
  outcome_bool: `${HEADER}\n${row({ outcome: '"{""A"": true, ""B"": 0}"' })}\n`,
  outcome_string: `${HEADER}\n${row({ outcome: '"{""A"": ""1"", ""B"": 0}"' })}\n`,
  outcome_negzero: `${HEADER}\n${row({ outcome: '"{""A"": 1.0, ""B"": -0.0}"' })}\n`,
  outcome_not_dict: `${HEADER}\n${row({ outcome: '"[1, 0]"' })}\n`,
  duplicate_markets: `${HEADER}\n${row({ markets: '"[""A"", ""B"", ""A""]"' })}\n`,
  sources_empty: `${HEADER}\n${row({ sources: '[]' })}\n`,
  sources_blank: `${HEADER}\n${row({ sources: '"[{""title"": "" "", ""summary"": """"}]"' })}\n`,
  source_not_dict: `${HEADER}\n${row({ sources: '"[""x""]"' })}\n`,
  source_no_summary: `${HEADER}\n${row({ sources: '"[{""title"": ""T""}]"' })}\n`,
  source_rankings:
    `${HEADER}\n` +
    row({
      sources:
        '"[{""title"": ""b"", ""summary"": ""s1"", ""ranking"": 2}, {""title"": ""a"", ""summary"": ""s2"", ""ranking"": 2}, {""title"": ""c"", ""summary"": ""s3"", ""ranking"": 2.0}, ' +
        '{""title"": ""d"", ""summary"": ""s4"", ""ranking"": true}, {""title"": ""e"", ""summary"": ""s5"", ""ranking"": null}, {""title"": ""  "", ""summary"": ""  ""}, ' +
        '{""title"": ""  f  "", ""summary"": ""\\n s6 "", ""ranking"": -1}, {""title"": ""é"", ""summary"": ""s7"", ""ranking"": 2}, {""title"": ""😀"", ""summary"": ""s8"", ""ranking"": 2}, {""title"": ""\uff5e"", ""summary"": ""s9"", ""ranking"": 2}]"',
    }) +
    '\n',
  snapshot_after_close: `${HEADER}\n${row({ snap: '2025-09-06T00:00:00Z' })}\n`,
  snapshot_equals_close: `${HEADER}\n${row({ snap: '2025-09-05T02:00:00+02:00' })}\n`,
  bad_datetime: `${HEADER}\n${row({ close: '2025-09-05T25:00' })}\n`,
  changes_across_snapshots: `${HEADER}\n${row()}\n${row({ id: 's0', snap: '2025-08-30T00:00:00Z', close: '2025-09-06T00:00:00Z' })}\n`,
  earliest_snapshot: `${HEADER}\n${row({ id: 's9', sources: '"[{""title"": ""late"", ""summary"": ""x""}]"' })}\n${row({ id: 's3', snap: '2025-08-31T23:00:00-01:00' })}\n${row({ id: 's1b', snap: '2025-08-20T00:00:00Z', sources: '"[{""title"": ""early"", ""summary"": ""x""}]"' })}\n`,
  csv_quirks: `${HEADER}\r\n\r\n${row({ title: '"Multi\nline ""quoted"" title"' })}\r\n\n${row({ id: 's2', ticker: 'EV2', title: 'a"b', category: '"Spo"rts' })}\r\n`,
  unterminated_quote: `${HEADER}\n${row({ ticker: 'EV2' })}\n${row({ id: 's3', ticker: 'EV3' }).replace(/"$/, '')}`,
  empty_category: `${HEADER}\n${row({ category: '  ' })}\n`,
  empty_file: '',
  header_only: `${HEADER}\n`,
  invalid_utf8: Buffer.concat([Buffer.from(`${HEADER}\n`), Buffer.from([0x73, 0xff, 0x31]), Buffer.from(row().slice(2) + '\n')]),
  crlf_in_unquoted: `${HEADER}\n${row({ title: 'a\rb' })}\n`,
};

let reference: {
  parsed: Array<number | null>;
  scores: Outcome[];
  brier: Outcome[];
  datetimes: Outcome[];
  structured: Outcome[];
  examples: unknown[];
  prompts: string[];
  initial_messages: unknown[];
  splits: Outcome[];
  csv_files: Outcome[];
  tags: string[][];
  auc: Array<number | null>;
  datasets: Array<{ len: number; batches: Array<Array<[string, string, number]>> }>;
  groups: { logs: unknown[][]; rewards: number[][]; group_metrics: unknown[][]; tags: string[][]; metrics: Record<string, number> };
};

const dir = mkdtempSync(join(tmpdir(), 'forecasting-parity-'));
const csvPaths = Object.entries(CSV_FILES).map(([name, text]) => {
  const p = join(dir, `${name}.csv`);
  writeFileSync(p, text);
  return p;
});
const SPLITS = [
  { path: SHIPPED, split_date: '2025-10-20', max_train: 1024, max_validation: 256, seed: 0 },
  { path: SHIPPED, split_date: '2025-10-20', max_train: 5, max_validation: 3, seed: 7 },
  { path: SHIPPED, split_date: '2025-10-20', max_train: 10, max_validation: 20, seed: 1 },
  { path: SHIPPED, split_date: '2025-09-15T00:00:00-03:00', max_train: null, max_validation: null, seed: -2 },
  { path: SHIPPED, split_date: '2026-06-01', max_train: null, max_validation: null, seed: 0 },
  { path: SHIPPED, split_date: '2025-01-01', max_train: null, max_validation: null, seed: 0 },
  { path: SHIPPED, split_date: '2025-10-20', max_train: 0, max_validation: 3, seed: 0 },
];

/** Each group: its example, category and outcome, and rollouts as (text, how sampling stopped). */
const GROUPS: Array<{ example: number; category: string; outcome: 0 | 1; rollouts: Array<[string, 'stop' | 'length' | 'unterminated']> }> = [
  { example: 0, category: 'Sports', outcome: 1, rollouts: [['0.8', 'stop'], ['Final answer: 0.6', 'stop'], ['no idea', 'stop'], ['0.9', 'length']] },
  { example: 1, category: 'Politics', outcome: 0, rollouts: [['0.2', 'stop'], ['50%', 'stop'], ['0.9', 'stop'], ['0.1', 'unterminated']] },
  { example: 2, category: 'Science and Technology', outcome: 1, rollouts: [['0.7', 'stop'], ['0.7', 'stop'], ['0.0078125', 'stop'], ['1', 'stop']] },
  { example: 3, category: 'Sports', outcome: 0, rollouts: [['0.3', 'stop'], ['0.65', 'stop'], ['Probability: 0.1', 'stop'], ['0.7', 'stop']] },
];

const view = (e: ForecastExample) => ({ ...e, snapshot_time: e.snapshot_time.isoformat(), close_time: e.close_time.isoformat() });

function tagged(v: PyValue): unknown {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return { int: String(v) };
  if (v instanceof PyFloat) return { float: pyRepr(v.value) };
  if (Array.isArray(v)) return v.map(tagged);
  if (v instanceof PyDict) return { dict: [...v.map].map(([k, x]) => [k, tagged(x)]), other_keys: v.otherKeys };
  if (v instanceof OtherPyValue) return { other: v.kind === 'set' ? 'set' : v.kind };
  throw new Error('unexpected value');
}
/** Python's repr of a float, for the few values the cases hold. */
function pyRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (Object.is(x, -0)) return '-0.0';
  const s = String(x);
  return /[.e]/.test(s) ? s.replace(/e\+?/, 'e+').replace('e+-', 'e-') : `${s}.0`;
}

let renderer: ReturnType<typeof getRenderer>;
let examples: ForecastExample[];
let actions: number[][][];

beforeAll(async () => {
  const tokenizer = await getTokenizer('parity:qwen3', shippedTokenizerDir('qwen3'));
  renderer = getRenderer('qwen3', tokenizer);
  examples = loadProphetArenaExamples(SHIPPED);
  const end = tokenizer.tokenToId('<|im_end|>');
  actions = GROUPS.map((g) => g.rollouts.map(([text, how]) => [...tokenizer.encode(text, { addSpecialTokens: false }), ...(how === 'stop' ? [end] : [])]));
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({
    tokenizer_dir: shippedTokenizerDir('qwen3'),
    renderer: 'qwen3',
    shipped: SHIPPED,
    responses: RESPONSES,
    scores: SCORES,
    brier: BRIER,
    datetimes: DATETIMES,
    structured: STRUCTURED,
    splits: SPLITS,
    csv_files: csvPaths,
    categories: CATEGORIES,
    auc: AUC,
    datasets: DATASETS,
    groups: GROUPS.map((g, i) => ({ ...g, rollouts: g.rollouts.map(([, how], j) => ({ tokens: actions[i][j], stop_reason: how === 'length' ? 'length' : 'stop' })) })),
  });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'forecasting_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const refusedOrValue = (o: Outcome) => ('ok' in o ? o.ok : 'refused');

describe('forecasting beside the reference', () => {
  it('parse_forecast: the same probability (or none) for every tricky answer', () => {
    const ours = RESPONSES.map(parseForecast);
    RESPONSES.forEach((r, i) => expect(ours[i], JSON.stringify(r)).toEqual(reference.parsed[i]));
    // The cases reach both sides of the parser.
    expect(ours.filter((p) => p === null).length).toBeGreaterThan(20);
    expect(ours.filter((p) => p !== null).length).toBeGreaterThan(40);
  });

  it('_score and brier_reward: the same values, the same refusals', () => {
    expect(SCORES.map(([p, y]) => outcome(() => scoreForecast(p, y))).map(refusedOrValue)).toEqual(reference.scores.map(refusedOrValue));
    expect(BRIER.map(([p, y]) => outcome(() => brierReward(p, y))).map(refusedOrValue)).toEqual(reference.brier.map(refusedOrValue));
  });

  it('parse_utc_datetime: the same instants (isoformat) and the same refusals', () => {
    const ours = DATETIMES.map((s) => outcome(() => parseUtcDatetime(s).isoformat()));
    DATETIMES.forEach((s, i) => expect(refusedOrValue(ours[i]), s).toEqual(refusedOrValue(reference.datetimes[i])));
  });

  it('_parse_structured (json.loads, else ast.literal_eval): the same values and refusals', () => {
    const ours = STRUCTURED.map((s) => outcome(() => tagged(parseStructured(s))));
    STRUCTURED.forEach((s, i) => expect(refusedOrValue(ours[i]), s).toEqual(refusedOrValue(reference.structured[i])));
  });

  it('load_prophet_arena_examples on the shipped set: the same questions, fields and order', () => {
    expect(examples.map(view)).toEqual(reference.examples);
    expect(examples.length).toBeGreaterThanOrEqual(40);
  });

  it('load_prophet_arena_split: the same train order (sample + shuffle), validation, exclusions and refusals', () => {
    const ours = SPLITS.map((c) =>
      outcome(() => {
        const s = loadProphetArenaSplit(c.path, { splitTime: parseUtcDatetime(c.split_date), maxTrainQuestions: c.max_train, maxValidationQuestions: c.max_validation, seed: c.seed });
        return { train: s.train.map(view), validation: s.validation.map(view), split_time: s.split_time.isoformat(), excluded: s.excluded_crossing_events };
      }),
    );
    SPLITS.forEach((c, i) => expect(refusedOrValue(ours[i]), JSON.stringify(c)).toEqual(refusedOrValue(reference.splits[i])));
    expect(ours.filter((o) => 'ok' in o).length).toBe(4);
  });

  it('hand-written CSVs (quoting, blank lines, snapshots, bad cells): the same questions or the same refusal', () => {
    const names = Object.keys(CSV_FILES);
    const ours = csvPaths.map((p) => outcome(() => loadProphetArenaExamples(p).map(view)));
    names.forEach((name, i) => expect(refusedOrValue(ours[i]), name).toEqual(refusedOrValue(reference.csv_files[i])));
    expect(ours.filter((o) => 'ok' in o).length).toBeGreaterThanOrEqual(8);
  });

  it('render_prompt and the initial message: the same text for every shipped question', () => {
    expect(examples.map(renderPrompt)).toEqual(reference.prompts);
  });

  it('ForecastEnv.initial_observation: one user message', async () => {
    expect(await Promise.all(examples.slice(0, 3).map((e) => new ForecastEnv(e).initialObservation()))).toEqual(reference.initial_messages);
  });

  it('logging_tags: prophet-arena and the casefolded category', () => {
    expect(CATEGORIES.map((c) => new ForecastGroupBuilder({ ...examples[0], category: c }, renderer, 1).loggingTags())).toEqual(reference.tags);
  });

  it('roc_auc: the same value with ties, none with one class', () => {
    expect(AUC.map(rocAuc)).toEqual(reference.auc);
  });

  it('ForecastRLDataset: the same length and batches, epochs included', () => {
    const ours = DATASETS.map((c) => {
      const ds = new ForecastRLDataset(examples, c.batch_size, c.group_size, renderer, c.epochs);
      return {
        len: ds.length,
        batches: Array.from({ length: ds.length }, (_, i) => ds.getBatch(i).map((b) => [(b as ForecastGroupBuilder).example.submission_id, (b as ForecastGroupBuilder).example.market, (b as ForecastGroupBuilder).groupSize])),
      };
    });
    expect(ours).toEqual(reference.datasets);
  });

  it('evaluated groups: step rewards and logs, group rewards and metrics, the evaluator metrics with AUC', async () => {
    const groups: TrajectoryGroup[] = [];
    const builders: ForecastGroupBuilder[] = [];
    for (const [gi, g] of GROUPS.entries()) {
      const builder = new ForecastGroupBuilder({ ...examples[g.example], category: g.category, outcome: g.outcome }, renderer, g.rollouts.length);
      const trajectories: Trajectory[] = [];
      for (const [ri, env] of (await builder.makeEnvs()).entries()) {
        const ob = await env.initialObservation();
        if (ob instanceof InitialObservationOverflow) throw new Error('unexpected overflow');
        const tokens = actions[gi][ri];
        const step = await env.step(tokens, { extra: { stop_reason: g.rollouts[ri][1] === 'length' ? 'length' : 'stop' } });
        const ac = tokensWithLogprobs(tokens, tokens.map(() => 0));
        trajectories.push({ transitions: [{ ob: ob.ob, ac, reward: step.reward, episodeDone: step.episodeDone, metrics: step.metrics ?? {}, logs: step.logs ?? {} }], finalOb: step.nextObservation, stopReason: null });
      }
      const rewards = await builder.computeGroupRewards(trajectories);
      groups.push(new TrajectoryGroup(trajectories, rewards.map(([r]) => r), rewards.map(([, m]) => m)));
      builders.push(builder);
    }
    expect(groups.map((g) => g.trajectoriesG.map((t) => t.transitions[0].logs))).toEqual(reference.groups.logs);
    expect(groups.map((g) => g.trajectoriesG.map((t) => t.transitions[0].reward))).toEqual(reference.groups.rewards);
    expect(groups.map((g) => g.metricsG)).toEqual(reference.groups.group_metrics);
    const tags = builders.map((b) => b.loggingTags());
    expect(tags).toEqual(reference.groups.tags);
    const metrics = Object.fromEntries(Object.entries({ ...computeTrajectoryMetrics(groups, tags), ...forecastAucMetrics(groups, tags) }).map(([k, v]) => [`test/${k}`, v]));
    expect(Object.keys(metrics).sort()).toEqual(Object.keys(reference.groups.metrics).sort());
    for (const [k, v] of Object.entries(reference.groups.metrics)) expect(metrics[k], k).toBeCloseTo(v, 12);
    expect(metrics['test/env/all/auc']).toBeGreaterThan(0);
  });
});
