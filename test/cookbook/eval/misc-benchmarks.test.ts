// IFBench, LongBench v2 and BFCL: IFBench's ported verifiers against goldens from IFBench's own
// checker library (test/fixtures/ifbench_gen_goldens.py), rows with instructions this port does not
// check skipped with the reason (test/cookbook/eval/skipped-rows.test.ts), unknown ids refused by id and row, the shipped samples loaded in their public layouts (BFCL's ground
// truth joined from possible_answer/), and BFCL graded from the parsed message's tool calls.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBenchmark, type BenchmarkDataOptions } from '../../../src/cookbook/eval/benchmark-data.js';
import { IFBENCH_CHECKERS, ifbenchFollows, NOT_PORTED } from '../../../src/cookbook/eval/ifbench/checkers.js';
import { sentTokenize } from '../../../src/cookbook/eval/ifbench/punkt.js';
import { countSyllables } from '../../../src/cookbook/eval/ifbench/syllables.js';
import { wordTokenize } from '../../../src/cookbook/eval/ifbench/treebank.js';
import { bfcl } from '../../../src/cookbook/eval/suites/bfcl.js';
import { ifbench } from '../../../src/cookbook/eval/suites/ifbench.js';
import { NO_EFFECTS, UnsupportedRowError } from '../../../src/cookbook/eval/suites/types.js';
import type { Message } from '../../../src/cookbook/renderers/types.js';

const REPO = path.join(import.meta.dirname, '..', '..', '..');
const dir = mkdtempSync(path.join(tmpdir(), 'h56d-misc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const opts = (suite: string, more: Partial<BenchmarkDataOptions> = {}): BenchmarkDataOptions => ({ suite, data_path: null, data_name: null, data_split: null, limit: null, system_prompt: null, ...more });

interface Goldens {
  cases: Array<{ id: string; kwargs: Record<string, unknown>; responses: string[]; followed: boolean[] }>;
  rows: Array<{ ids: string[]; kwargs: Array<Record<string, unknown>>; responses: string[]; results: Array<[number, boolean]> }>;
  sentences: Array<{ text: string; sentences: string[]; words: string[] }>;
  syllables: Array<[string, number]>;
}
const goldens = JSON.parse(readFileSync(path.join(REPO, 'test/fixtures/ifbench_goldens.json'), 'utf8')) as Goldens;
/** IFBench's own sample responses, graded by the reference (test/fixtures/ifbench_gen_sample_goldens.py). */
const samples = JSON.parse(readFileSync(path.join(REPO, 'test/fixtures/ifbench_sample_goldens.json'), 'utf8')) as {
  rows: Array<{ key: number; ids: string[]; kwargs: unknown[]; response: string; result: [number, boolean] }>;
};

describe("IFBench's verifiers", () => {
  it.each(goldens.cases.map((c) => [c.id, c] as const))('%s follows as IFBench checks it', (_id, c) => {
    expect(c.responses.map((r) => ifbenchFollows(c.id, r, c.kwargs))).toEqual(c.followed);
  });

  it('every ported IFBench id has goldens; the ported and the refused ids are IFBench\'s 58', () => {
    const covered = new Set(goldens.cases.map((c) => c.id));
    expect(Object.keys(IFBENCH_CHECKERS).filter((id) => !covered.has(id))).toEqual([]);
    expect(Object.keys(IFBENCH_CHECKERS).length + Object.keys(NOT_PORTED).length).toBe(58);
  });

  it("splits sentences and words as nltk's sent_tokenize and word_tokenize (abbreviations, initials, quotes, ellipses, emoji)", () => {
    for (const g of goldens.sentences) {
      expect(sentTokenize(g.text), g.text).toEqual(g.sentences);
      expect(wordTokenize(g.text), g.text).toEqual(g.words);
    }
  });

  it("counts syllables as syllapy.count (its dictionary, compounds, words with digits)", () => {
    expect(goldens.syllables.map(([w]) => [w, countSyllables(w)])).toEqual(goldens.syllables);
  });

  it('a prompt is correct when every instruction is followed; its fraction is the share followed', async () => {
    for (const row of goldens.rows) {
      const item = ifbench.parseRow({ prompt: 'p', instruction_id_list: row.ids, kwargs: row.kwargs }, 'row', null);
      const grades = await Promise.all(row.responses.map(async (r) => await ifbench.grade(r, item)));
      expect(grades.map((g) => [g.metrics!.fraction, g.correct])).toEqual(row.results);
    }
  });

  it("grades IFBench's own sample responses as the reference does, on every test row asking for an instruction built on nltk, emoji or syllapy", async () => {
    const grades = await Promise.all(
      samples.rows.map(async (r) => {
        const item = ifbench.parseRow({ prompt: `key ${r.key}`, instruction_id_list: r.ids, kwargs: r.kwargs }, `key ${r.key}`, null);
        const grade = await ifbench.grade(r.response, item);
        return [grade.metrics!.fraction, grade.correct];
      }),
    );
    expect(samples.rows.length).toBe(103);
    expect(grades).toEqual(samples.rows.map((r) => r.result));
  });

  it('a row with an instruction this port does not check is unsupported (skipped when loaded); one IFBench does not know, or a bad kwarg, is refused naming the id and the row', () => {
    const row = (id: string) => ({ prompt: 'p', instruction_id_list: ['format:no_whitespace', id], kwargs: [{}, { N: 3 }] });
    const startVerb = () => ifbench.parseRow(row('words:start_verb'), 'IFBench_test.jsonl:7', null);
    expect(startVerb).toThrow(UnsupportedRowError);
    expect(startVerb).toThrow(`instruction "words:start_verb" is an IFBench instruction this port cannot check: it needs nltk's averaged perceptron POS tagger weights (nltk_data taggers/averaged_perceptron_tagger_eng), which this project cannot obtain`);
    expect(() => ifbench.parseRow({ prompt: 'p', instruction_id_list: ['sentence:keyword'], kwargs: [{ word: '', N: 2 }] }, 'x:2', null)).toThrow(/x:2: instruction "sentence:keyword": kwarg "word" must not be empty/);
    expect(() => ifbench.parseRow(row('count:made_up'), 'IFBench_test.jsonl:8', null)).toThrow(/IFBench_test.jsonl:8: unknown instruction "count:made_up"/);
    expect(() => ifbench.parseRow({ prompt: 'p', instruction_id_list: ['count:numbers'], kwargs: [{ N: null }] }, 'x:1', null)).toThrow(/x:1: instruction "count:numbers" needs kwarg "N"/);
  });
});

describe('the shipped samples', () => {
  it('load in their public layouts (BFCL: the simple file, its ground truth from possible_answer/)', async () => {
    for (const name of ['ifbench', 'longbench', 'bfcl']) {
      const { items } = await loadBenchmark(opts(name));
      expect(items.length).toBeGreaterThanOrEqual(4);
      expect(new Set(items.map((i) => i.id)).size).toBe(items.length);
    }
    const { items } = await loadBenchmark(opts('bfcl'));
    expect(items[1]!.target).toEqual({ convert_temperature: { value: [30], from_scale: ['celsius'], to_scale: ['fahrenheit'] } });
  });

  it('a system prompt is refused, naming the setting: the reference sends each prompt alone', async () => {
    for (const name of ['ifbench', 'longbench', 'bfcl']) {
      await expect(loadBenchmark(opts(name, { system_prompt: 'Be brief.' }))).rejects.toThrow(new RegExp(`^system_prompt: ${name} sends .* alone`));
    }
  });

  it('a BFCL row without ground truth, inline or beside it, is refused naming the file and the id', async () => {
    const file = path.join(dir, 'bfcl', 'BFCL_v3_simple.json');
    mkdirSync(path.join(dir, 'bfcl', 'possible_answer'), { recursive: true });
    writeFileSync(file, `${JSON.stringify({ id: 'simple_9', question: [[{ role: 'user', content: 'q' }]], function: [] })}\n`);
    await expect(loadBenchmark(opts('bfcl', { data_path: file }))).rejects.toThrow(/BFCL_v3_simple.json:1: no "ground_truth" in the row and no .*possible_answer\/BFCL_v3_simple.json to look id "simple_9" up in/);
    writeFileSync(path.join(dir, 'bfcl', 'possible_answer', 'BFCL_v3_simple.json'), `${JSON.stringify({ id: 'simple_8', ground_truth: [{ f: {} }] })}\n`);
    await expect(loadBenchmark(opts('bfcl', { data_path: file }))).rejects.toThrow(/BFCL_v3_simple.json:1: id "simple_9" has no ground truth in/);
  });
});

describe('BFCL graded from the parsed message', () => {
  const item = bfcl.parseRow({ id: 'x', question: [{ role: 'user', content: 'Weather?' }], function: [], ground_truth: { name: 'get_weather', arguments: { city: 'Paris' } } }, 'row', null);
  const message = (content: Message['content'], calls: Array<[string, string]>): Message => ({
    role: 'assistant',
    content,
    tool_calls: calls.map(([name, args]) => ({ type: 'function', function: { name, arguments: args } })),
  });

  it('reads the tool call the renderer parsed out of the text (the reference reads it in the raw decode)', async () => {
    const ok = message([{ type: 'thinking', thinking: 'the user wants weather' }, { type: 'text', text: '' }], [['get_weather', '{"city": " PARIS"}']]);
    expect((await bfcl.grade('', item, { ...NO_EFFECTS, message: ok })).correct).toBe(true);
    expect((await bfcl.grade('', item, { ...NO_EFFECTS, message: message('', [['get_time', '{"city": "Paris"}']]) })).correct).toBe(false);
  });

  it('reads the thinking first, as the raw decode has it: a JSON object there is the call read', async () => {
    const thinkingFirst = message([{ type: 'thinking', thinking: 'maybe {"name": "get_time", "arguments": {}}' }], [['get_weather', '{"city": "Paris"}']]);
    expect((await bfcl.grade('', item, { ...NO_EFFECTS, message: thinkingFirst })).correct).toBe(false);
  });
});
