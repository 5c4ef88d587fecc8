#!/usr/bin/env node
// `npm run bench:engine [-- --device cuda --model DIR --sections ... --threads N]`: builds the engine's
// cached Python environment if needed and runs bench_engine.py, which starts its own engines on free
// loopback ports and measures them against plain PyTorch / transformers on the same device.

import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { engineProcessEnv, ensureEngineEnv } from '../../src/stack/engine-env.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
if (!args.includes('--threads')) args.push('--threads', String(os.availableParallelism()));
const { python } = await ensureEngineEnv();
const bench = spawn(python, [path.join(here, 'bench_engine.py'), ...args], { env: engineProcessEnv(), stdio: 'inherit' });
bench.on('exit', (code) => process.exit(code ?? 1));
