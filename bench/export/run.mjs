#!/usr/bin/env node
// `npm run bench:export [-- --layers 8 --hidden 2048 --intermediate 6144]`: builds a multi-shard float32
// base (about 1.7 GiB in 9 shards by default) and a LoRA, then merges it with the `shard` and the `full`
// strategy, each in its own process, and prints each one's peak resident memory beside the largest
// shard and the whole base (bench_export.py; docs/export.md states the figures).
// `-- --base mxfp4 --experts 8 --intermediate 1024`: the same on a GPT-OSS-shaped base with MXFP4
// experts (each merged expert tensor dequantized, merged and requantized).

import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { engineProcessEnv, ensureEngineEnv } from '../../src/stack/engine-env.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { python } = await ensureEngineEnv();
const bench = spawn(python, [path.join(here, 'bench_export.py'), ...process.argv.slice(2)], { env: engineProcessEnv(), stdio: 'inherit' });
bench.on('exit', (code) => process.exit(code ?? 1));
