// Node modules for the scripts that must work as the first command on a fresh clone (`npm test`,
// `npm run demo`, `npm run test:compose`): a clean install of exactly what package-lock.json pins
// (`npm ci`) when node_modules is missing or older than the lockfile. npm's own cache (~/.npm)
// keeps repeated installs offline-fast.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** True when node_modules holds what package-lock.json pins (npm writes its copy on install). */
function upToDate(root) {
  const installed = join(root, 'node_modules', '.package-lock.json');
  if (!existsSync(installed)) return false;
  return statSync(installed).mtimeMs >= statSync(join(root, 'package-lock.json')).mtimeMs;
}

export function ensureNodeModules(root, log = (msg) => console.error(msg)) {
  if (upToDate(root)) return;
  log('installing node modules (npm ci: exactly the versions package-lock.json pins)…');
  // `npm ci` replaces node_modules and fails, instead of silently re-resolving, when the lockfile
  // is out of sync with package.json.
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`npm ci failed (exit ${r.status}); run it by hand to see why`);
}
