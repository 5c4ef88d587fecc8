#!/usr/bin/env node
// `npm run demo`: from a fresh clone to a trained model. Installs node modules when missing, then
// hands over to the TypeScript demo (which installs the Temporal CLI and the engine environment
// into ~/.cache/durable-cookbook on first use).
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureNodeModules } from './lib/node-modules.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
ensureNodeModules(root);
const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src', 'cli', 'demo.ts'), ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
