// Whom the worker container (Dockerfile.worker, docker-compose.yml) runs as. It writes the runs'
// log dirs into the host's ./runs, bind-mounted at COOKBOOK_RUNS_DIR, so it runs as that folder's
// owner: the files it writes then belong to whoever owns the checkout, and it can always write
// there, whatever the host user's uid is (a fixed uid such as 1000 cannot write a root-owned
// ./runs, and the run would wait for a worker forever). COOKBOOK_UID / COOKBOOK_GID override the
// owner. The container starts as root only to switch to that user before anything else runs.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** A setup problem the worker cannot run with; its message says what to change. */
export class WorkerUserError extends Error {}

function idFrom(env, name) {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw)) throw new WorkerUserError(`${name}=${raw} is not a numeric id (set it to \`id -u\` / \`id -g\` of the user who should own the log dirs, or leave it unset to use the owner of ./runs)`);
  return Number(raw);
}

/**
 * The uid:gid to run as: COOKBOOK_UID / COOKBOOK_GID when set, else the owner of the runs folder.
 * @param {{ env: Record<string, string | undefined>, statOf?: (path: string) => { uid: number, gid: number, isDirectory(): boolean } }} opts
 * @returns {{ runsDir: string, uid: number, gid: number, owner: { uid: number, gid: number }, from: 'owner' | 'COOKBOOK_UID' }}
 */
export function workerIdentity({ env, statOf = statSync }) {
  const runsDir = env.COOKBOOK_RUNS_DIR;
  if (!runsDir) throw new WorkerUserError('COOKBOOK_RUNS_DIR is not set: it names the folder the worker writes log dirs into (docker-compose.yml sets it to ${PWD}/runs and mounts ./runs there)');
  let st;
  try {
    st = statOf(runsDir);
  } catch {
    throw new WorkerUserError(`the runs folder ${runsDir} (COOKBOOK_RUNS_DIR) does not exist in the container: docker-compose.yml mounts ./runs there; run \`mkdir -p runs\` and \`docker compose up\` from the repository root`);
  }
  if (!st.isDirectory()) throw new WorkerUserError(`the runs folder ${runsDir} (COOKBOOK_RUNS_DIR) is not a directory`);
  const owner = { uid: st.uid, gid: st.gid };
  const uid = idFrom(env, 'COOKBOOK_UID');
  const gid = idFrom(env, 'COOKBOOK_GID');
  if (uid === undefined && gid === undefined) return { runsDir, ...owner, owner, from: 'owner' };
  return { runsDir, uid: uid ?? owner.uid, gid: gid ?? owner.gid, owner, from: 'COOKBOOK_UID' };
}

/** The home folder /etc/passwd gives `uid`, else /tmp (an arbitrary host uid has no entry). */
function homeOf(uid) {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (Number(f[2]) === uid && f[5]) return f[5];
    }
  } catch {
    // no passwd file: fall through
  }
  return '/tmp';
}

/**
 * Switches this process to the worker's user (when it runs as root) and checks that it can write
 * the runs folder; throws WorkerUserError naming the folder, its owner and the fix otherwise.
 * @returns {string} one line saying whom the worker runs as, and why
 */
export function becomeWorkerUser(env = process.env) {
  const who = workerIdentity({ env });
  // Started as another user (`user:` in a compose override, `docker run --user`), it cannot
  // switch; the write check below says whether that user can work here.
  if (process.getuid() === 0 && (who.uid !== 0 || who.gid !== 0)) {
    process.setgroups([who.gid]);
    process.setgid(who.gid);
    process.setuid(who.uid);
    env.HOME = homeOf(who.uid);
  }
  const me = `${process.getuid()}:${process.getgid()}`;
  const fix =
    who.from === 'owner'
      ? 'start the container as root (the image does; drop any `user:` override) so the worker becomes the owner of ./runs, or make ./runs writable for that user'
      : 'set COOKBOOK_UID/COOKBOOK_GID to the owner of ./runs (`stat -c %u:%g runs`), or unset them to use the owner';
  try {
    rmSync(mkdtempSync(join(who.runsDir, '.worker-write-check-')), { recursive: true, force: true });
  } catch (err) {
    throw new WorkerUserError(`the worker (uid:gid ${me}) cannot write the runs folder ${who.runsDir} (./runs on the host, owned by ${who.owner.uid}:${who.owner.gid}): ${err.code ?? err.message}; ${fix}`);
  }
  const why =
    who.from === 'COOKBOOK_UID'
      ? `COOKBOOK_UID/COOKBOOK_GID; ${who.runsDir} belongs to ${who.owner.uid}:${who.owner.gid}`
      : who.uid === 0
        ? `the owner of ${who.runsDir}: root; if Docker created ./runs for you, \`sudo chown $(id -u):$(id -g) runs\` and restart the worker`
        : `the owner of ${who.runsDir}`;
  return `worker runs as uid:gid ${me} (${why})`;
}
