#!/usr/bin/env node
// Writes data/rl_numerics_check/corpus.txt, the English text the rl_numerics_check recipe cuts its
// documents from: the prose of this repository's docs/*.md (headings, code blocks and tables
// dropped, markdown markup removed), one paragraph line per line. The reference reads WikiText-103
// from the Hugging Face Hub; any natural English works, since the task only counts words in it.
import { readdirSync, readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.join(import.meta.dirname, '..');
const lines = [];
for (const file of readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort()) {
  let inCode = false;
  for (const raw of readFileSync(path.join(ROOT, 'docs', file), 'utf8').split('\n')) {
    if (raw.trimStart().startsWith('```')) {
      inCode = !inCode;
      continue;
    }
    if (inCode || /^\s*(#|\||<|---)/.test(raw)) continue;
    const line = raw
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[`*_]/g, '')
      .replace(/^\s*[-\d.]+\s+/, '')
      .trim();
    if (line.split(/\s+/).length >= 6) lines.push(line);
  }
}
const out = path.join(ROOT, 'data', 'rl_numerics_check');
mkdirSync(out, { recursive: true });
writeFileSync(path.join(out, 'corpus.txt'), lines.join('\n') + '\n');
console.log(`${lines.length} lines, ${lines.join('\n').length} characters`);
