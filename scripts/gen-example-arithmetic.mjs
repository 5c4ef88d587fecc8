#!/usr/bin/env node
// Generates data/example_arithmetic.jsonl: 200 chat rows "What is x + y?" → "x+y", the format of
// the RL arithmetic env (spec §3.2, answer only, as its few-shot prefix), with x, y in [0, 100].
// It is the SFT stage of configs/pipeline_sft_rl.json: the model learns the answer format first,
// then RL on the env rewards correct sums. Deterministic: a fixed-seed PRNG.
//
// Usage: node scripts/gen-example-arithmetic.mjs [outDir]   (default: <repo>/data)

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rng } from './lib/rng.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const rand = rng(3141);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const rows = Array.from({ length: 200 }, () => {
  const x = int(0, 100);
  const y = int(0, 100);
  return { messages: [{ role: 'user', content: `What is ${x} + ${y}?` }, { role: 'assistant', content: String(x + y) }] };
});
const outDir = path.resolve(process.argv[2] ?? path.join(root, 'data'));
mkdirSync(outDir, { recursive: true });
writeFileSync(path.join(outDir, 'example_arithmetic.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
console.log(`wrote ${rows.length} conversations to ${path.join(outDir, 'example_arithmetic.jsonl')}`);
