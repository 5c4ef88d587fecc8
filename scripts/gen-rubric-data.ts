// The rubric recipe's example data (reference `python -m tinker_cookbook.recipes.rubric.generate_data`):
//
//   node --import tsx scripts/gen-rubric-data.ts [--num-train N] [--num-test M] [--seed S] [--out DIR]
//
// Defaults are the reference's: 10000 train and 1000 test datapoints, seed 42. DIR (default
// data/rubric) gets example_rubric_train.jsonl and example_rubric_test.jsonl, byte-identical to the
// reference's files for the same arguments. The shipped data/rubric/ files are `--num-train 64
// --num-test 8`.
import { parseArgs } from 'node:util';
import { writeRubricDataset } from '../src/cookbook/rl/envs/rubric-generate.js';

const { values } = parseArgs({
  options: {
    'num-train': { type: 'string', default: '10000' },
    'num-test': { type: 'string', default: '1000' },
    seed: { type: 'string', default: '42' },
    out: { type: 'string', default: 'data/rubric' },
  },
});

function count(flag: string, raw: string): number {
  if (!/^-?\d+$/.test(raw)) {
    console.error(`--${flag}: "${raw}" is not an integer`);
    process.exit(2);
  }
  return Number(raw);
}

const numTrain = count('num-train', values['num-train']);
const numTest = count('num-test', values['num-test']);
const seed = count('seed', values.seed);
if (numTrain < 0 || numTest < 0) {
  console.error('--num-train and --num-test must not be negative');
  process.exit(2);
}
const r = writeRubricDataset(numTrain, numTest, seed, values.out);
console.log(`Generated ${r.train} train datapoints in ${r.trainPath}`);
console.log(`Generated ${r.test} test datapoints in ${r.testPath}`);
