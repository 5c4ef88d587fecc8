#!/usr/bin/env node
// `npm run demo`: from a fresh clone to a trained model. Installs node modules when missing, then
// hands over to the TypeScript demo (which installs the Temporal CLI and the engine environment
// into ~/.cache/durable-cookbook on first use).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (!existsSync(join(root, 'node_modules', 'tsx'))) {
  console.error('installing node modules (npm install, locked versions)…');
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src', 'cli', 'demo.ts'), ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
