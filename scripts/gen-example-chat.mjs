#!/usr/bin/env node
// Generates the built-in example chat datasets:
//   data/example_chat.jsonl        (300 conversations, the demo's training data)
//   data/example_chat_small.jsonl  (24 conversations, for fast tests)
// Short, templated answers (arithmetic, capitals, unit conversions, spelling, simple word tasks)
// so that even a tiny randomly initialised model visibly lowers its loss within ~20 steps.
// Deterministic: a fixed-seed PRNG, so re-running reproduces the files byte for byte.
//
// Usage: node scripts/gen-example-chat.mjs [outDir]   (default: <repo>/data)

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rng } from './lib/rng.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const CAPITALS = [
  ['France', 'Paris'], ['Germany', 'Berlin'], ['Italy', 'Rome'], ['Spain', 'Madrid'], ['Japan', 'Tokyo'],
  ['Canada', 'Ottawa'], ['Egypt', 'Cairo'], ['Kenya', 'Nairobi'], ['Peru', 'Lima'], ['Norway', 'Oslo'],
  ['Sweden', 'Stockholm'], ['Greece', 'Athens'], ['Portugal', 'Lisbon'], ['Austria', 'Vienna'], ['Ireland', 'Dublin'],
  ['Poland', 'Warsaw'], ['Chile', 'Santiago'], ['Cuba', 'Havana'], ['Thailand', 'Bangkok'], ['Finland', 'Helsinki'],
];
const WORDS = ['apple', 'river', 'cloud', 'tiger', 'lemon', 'chair', 'green', 'house', 'music', 'stone', 'bread', 'light', 'ocean', 'plant', 'smile'];
const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const COLORS = [['sky', 'blue'], ['grass', 'green'], ['snow', 'white'], ['a banana', 'yellow'], ['coal', 'black'], ['a tomato', 'red']];
const SYSTEM_PROMPTS = ['You are a helpful assistant.', 'Answer briefly and precisely.', 'You are a concise tutor.'];

function makeGenerators(r) {
  const int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  return [
    () => {
      const a = int(1, 50), b = int(1, 50);
      return [`What is ${a} + ${b}?`, `${a} + ${b} = ${a + b}.`];
    },
    () => {
      const a = int(10, 99), b = int(1, a);
      return [`What is ${a} - ${b}?`, `${a} - ${b} = ${a - b}.`];
    },
    () => {
      const a = int(2, 12), b = int(2, 12);
      return [`What is ${a} times ${b}?`, `${a} times ${b} is ${a * b}.`];
    },
    () => {
      const [country, city] = pick(CAPITALS);
      return [`What is the capital of ${country}?`, `The capital of ${country} is ${city}.`];
    },
    () => {
      const m = int(1, 20);
      return [`How many centimeters are in ${m} meters?`, `${m} meters is ${m * 100} centimeters.`];
    },
    () => {
      const kg = int(1, 30);
      return [`How many grams are in ${kg} kilograms?`, `${kg} kilograms is ${kg * 1000} grams.`];
    },
    () => {
      const h = int(1, 12);
      return [`How many minutes are in ${h} hours?`, `${h} hours is ${h * 60} minutes.`];
    },
    () => {
      const w = pick(WORDS);
      return [`Spell the word "${w}".`, w.toUpperCase().split('').join('-')];
    },
    () => {
      const w = pick(WORDS);
      return [`Reverse the word "${w}".`, `"${w}" reversed is "${w.split('').reverse().join('')}".`];
    },
    () => {
      const w = pick(WORDS);
      return [`How many letters are in "${w}"?`, `"${w}" has ${w.length} letters.`];
    },
    () => {
      const i = int(0, 6);
      return [`What day comes after ${DAYS[i]}?`, `The day after ${DAYS[i]} is ${DAYS[(i + 1) % 7]}.`];
    },
    () => {
      const [thing, color] = pick(COLORS);
      return [`What color is ${thing}?`, `${thing[0].toUpperCase() + thing.slice(1)} is ${color}.`];
    },
    () => {
      const w = pick(WORDS);
      return [`Write "${w}" in capital letters.`, w.toUpperCase()];
    },
  ];
}

function generate(n, seed) {
  const r = rng(seed);
  const gens = makeGenerators(r);
  const rows = [];
  for (let i = 0; i < n; i++) {
    const messages = [];
    const style = r();
    if (style < 0.2) messages.push({ role: 'system', content: SYSTEM_PROMPTS[Math.floor(r() * SYSTEM_PROMPTS.length)] });
    const turns = style > 0.85 ? 2 : 1;
    for (let t = 0; t < turns; t++) {
      const [q, a] = gens[Math.floor(r() * gens.length)]();
      messages.push({ role: 'user', content: q }, { role: 'assistant', content: a });
    }
    rows.push(JSON.stringify({ messages }));
  }
  return rows.join('\n') + '\n';
}

const outDir = path.resolve(process.argv[2] ?? path.join(root, 'data'));
mkdirSync(outDir, { recursive: true });
writeFileSync(path.join(outDir, 'example_chat.jsonl'), generate(300, 20260901));
writeFileSync(path.join(outDir, 'example_chat_small.jsonl'), generate(24, 7));
console.log(`wrote ${outDir}/example_chat.jsonl (300 rows) and example_chat_small.jsonl (24 rows)`);
