// Node modules for the scripts that must work as the first command on a fresh clone (`npm test`,
// `npm run demo`): installed from the lockfile when missing or older than package-lock.json.
// npm's own cache (~/.npm) keeps repeated installs offline-fast.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** True when node_modules holds what package-lock.json pins (npm rewrites its copy on install). */
function upToDate(root) {
  const installed = join(root, 'node_modules', '.package-lock.json');
  if (!existsSync(installed)) return false;
  return statSync(installed).mtimeMs >= statSync(join(root, 'package-lock.json')).mtimeMs;
}

export function ensureNodeModules(root, log = (msg) => console.error(msg)) {
  if (upToDate(root)) return;
  log('installing node modules (npm install, locked versions)…');
  // `npm ci` would refuse a lockfile without other platforms' optional packages, which this
  // project's registry does not serve; `npm install` installs exactly the locked versions anyway.
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`npm install failed (exit ${r.status}); run it by hand to see why`);
}
