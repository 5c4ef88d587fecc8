// The rubric recipe's example data (reference recipes/rubric/generate_data.py): addition questions
// after a one-shot "4 + 5" exchange, each graded by one rubric item naming the sum. The operands are
// `random.Random(seed).randint(0, 1000)` draws, and each line is Python's `json.dumps` of the
// datapoint, so a seed gives the reference's files byte for byte.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pyJsonDumps } from '../../pyjson.js';
import { PythonRandom, randbelow } from '../../python-random.js';
import { DEFAULT_EXTRACTION_REGEX, DEFAULT_GRADER_OUTPUT_FORMAT_INSTRUCTION, type RubricDatapoint } from './rubric.js';

/** `rng.randint(lo, hi)`: randrange(lo, hi + 1) = lo + _randbelow(hi − lo + 1). */
const randint = (rng: PythonRandom, lo: number, hi: number) => lo + randbelow(rng, hi - lo + 1);

export function generateOneRubricDatapoint(rng: PythonRandom): RubricDatapoint {
  const x = randint(rng, 0, 1000);
  const y = randint(rng, 0, 1000);
  return {
    convo: [
      { role: 'user', content: 'What is 4 + 5?' },
      { role: 'assistant', content: '9' },
      { role: 'user', content: `What is ${x} + ${y}?` },
    ],
    rubric_items: [
      {
        rubric_str: `Does the chatbot correctly get the answer ${x + y}?`,
        extraction_regex: DEFAULT_EXTRACTION_REGEX,
        grader_output_format_instruction: DEFAULT_GRADER_OUTPUT_FORMAT_INSTRUCTION,
      },
    ],
  };
}

/** RubricBasedDatapoint.to_json: the keys in the reference's order, Python's separators. */
export const rubricDatapointJson = (d: RubricDatapoint): string =>
  pyJsonDumps({
    convo: d.convo,
    rubric_items: d.rubric_items.map((r) => ({ rubric_str: r.rubric_str, extraction_regex: r.extraction_regex, grader_output_format_instruction: r.grader_output_format_instruction })),
  });

/** num_train + num_test datapoints from one stream: the first num_train train, the rest test. */
export function generateRubricDatapoints(numTrain: number, numTest: number, seed: number): { train: RubricDatapoint[]; test: RubricDatapoint[] } {
  for (const [name, n] of [['num_train', numTrain], ['num_test', numTest]] as const) {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative integer, got ${n}`);
  }
  const rng = new PythonRandom(seed);
  const all = Array.from({ length: numTrain + numTest }, () => generateOneRubricDatapoint(rng));
  return { train: all.slice(0, numTrain), test: all.slice(numTrain) };
}

export const RUBRIC_TRAIN_FILE = 'example_rubric_train.jsonl';
export const RUBRIC_TEST_FILE = 'example_rubric_test.jsonl';

/** Writes the two files the reference's generate_dataset writes into `dir`; returns their paths. */
export function writeRubricDataset(numTrain: number, numTest: number, seed: number, dir: string): { trainPath: string; testPath: string; train: number; test: number } {
  const { train, test } = generateRubricDatapoints(numTrain, numTest, seed);
  mkdirSync(dir, { recursive: true });
  const write = (file: string, rows: RubricDatapoint[]) => {
    const p = path.join(dir, file);
    writeFileSync(p, rows.map((d) => rubricDatapointJson(d) + '\n').join(''));
    return p;
  };
  return { trainPath: write(RUBRIC_TRAIN_FILE, train), testPath: write(RUBRIC_TEST_FILE, test), train: train.length, test: test.length };
}
