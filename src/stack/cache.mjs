// One cache root for everything the project installs outside the clone (venvs, binaries), so a
// fresh clone and CI reuse earlier installs instead of downloading again.
import { homedir } from 'node:os';
import { join } from 'node:path';

export function cacheRoot() {
  return process.env.DURABLE_COOKBOOK_CACHE || join(homedir(), '.cache', 'durable-cookbook');
}
