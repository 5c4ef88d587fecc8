#!/usr/bin/env node
// Generates the built-in comparison dataset data/example_preferences.jsonl (100 pairs) for DPO.
// The chosen answer is short and correct ("7 + 5 = 12."); the rejected one hedges with a fixed
// set of filler phrases and gets the answer wrong, so even a tiny randomly initialised model can
// learn to prefer the chosen style within a few steps. Rows use both accepted shapes (chosen/rejected,
// and the reference's {"comparison": …, "label": "A"|"B"}). Deterministic: a fixed-seed PRNG.
//
// Usage: node scripts/gen-example-preferences.mjs [outDir]   (default: <repo>/data)

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rng } from './lib/rng.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const rand = rng(20260807);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

const FILLERS = ['Hmm, well,', 'Um, honestly,', 'Okay so, basically,'];
const HEDGES = ['I guess', 'maybe', 'roughly'];
const OPS = [
  ['+', (a, b) => a + b, 'plus'],
  ['-', (a, b) => a - b, 'minus'],
  ['*', (a, b) => a * b, 'times'],
];

const user = (content) => ({ role: 'user', content });
const assistant = (content) => ({ role: 'assistant', content });

const rows = [];
for (let i = 0; i < 100; i++) {
  const [sym, fn, word] = pick(OPS);
  const a = int(2, 20);
  const b = int(2, 12);
  const answer = fn(a, b);
  const wrong = answer + pick([-3, -2, -1, 1, 2, 3, 10]);
  const prompt = [user(rand() < 0.5 ? `What is ${a} ${sym} ${b}?` : `What is ${a} ${word} ${b}?`)];
  const chosen = [assistant(`${a} ${sym} ${b} = ${answer}.`)];
  const rejected = [assistant(`${pick(FILLERS)} ${pick(HEDGES)} ${wrong}, not sure.`)];
  const shape = i % 4;
  if (shape === 0 || shape === 1) rows.push({ prompt_conversation: prompt, chosen, rejected });
  else if (shape === 2) rows.push({ comparison: { prompt_conversation: prompt, completion_A: rejected, completion_B: chosen }, label: 'B' });
  else rows.push({ comparison: { prompt_conversation: prompt, completion_A: chosen, completion_B: rejected }, label: 'A' });
}

const outDir = path.resolve(process.argv[2] ?? path.join(root, 'data'));
mkdirSync(outDir, { recursive: true });
writeFileSync(path.join(outDir, 'example_preferences.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
console.log(`wrote ${rows.length} comparisons to ${path.join(outDir, 'example_preferences.jsonl')}`);
