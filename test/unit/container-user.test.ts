// The worker container runs as the owner of the mounted ./runs (src/workers/container-user.mjs):
// the choice of uid:gid, its setup errors, and (as root, as a container starts) the switch itself
// in a child process, with the write check that turns an unwritable ./runs into an error instead
// of a worker that never writes.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkerUserError, workerIdentity } from '../../src/workers/container-user.mjs';

const dir = (uid: number, gid: number) => () => ({ uid, gid, isDirectory: () => true });

describe('workerIdentity', () => {
  it('takes the owner of the runs folder', () => {
    expect(workerIdentity({ env: { COOKBOOK_RUNS_DIR: '/r/runs' }, statOf: dir(0, 0) })).toMatchObject({ uid: 0, gid: 0, from: 'owner' });
    expect(workerIdentity({ env: { COOKBOOK_RUNS_DIR: '/r/runs', COOKBOOK_UID: '' }, statOf: dir(1234, 99) })).toMatchObject({ uid: 1234, gid: 99, from: 'owner' });
  });

  it('lets COOKBOOK_UID / COOKBOOK_GID override the owner, each on its own', () => {
    expect(workerIdentity({ env: { COOKBOOK_RUNS_DIR: '/r', COOKBOOK_UID: '1000', COOKBOOK_GID: '1001' }, statOf: dir(0, 0) })).toMatchObject({ uid: 1000, gid: 1001, from: 'COOKBOOK_UID' });
    expect(workerIdentity({ env: { COOKBOOK_RUNS_DIR: '/r', COOKBOOK_UID: '1000' }, statOf: dir(5, 6) })).toMatchObject({ uid: 1000, gid: 6 });
  });

  it('names the setting or folder that is wrong', () => {
    const bad = (env: Record<string, string>, statOf = dir(1, 1)) => () => workerIdentity({ env, statOf });
    expect(bad({})).toThrow(/COOKBOOK_RUNS_DIR is not set/);
    expect(
      bad({ COOKBOOK_RUNS_DIR: '/nowhere/runs' }, () => {
        throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      }),
    ).toThrow(/\/nowhere\/runs \(COOKBOOK_RUNS_DIR\) does not exist.*mkdir -p runs/);
    expect(bad({ COOKBOOK_RUNS_DIR: '/r' }, () => ({ uid: 0, gid: 0, isDirectory: () => false }))).toThrow(/is not a directory/);
    expect(bad({ COOKBOOK_RUNS_DIR: '/r', COOKBOOK_UID: 'alice' })).toThrow(WorkerUserError);
    expect(bad({ COOKBOOK_RUNS_DIR: '/r', COOKBOOK_UID: 'alice' })).toThrow(/COOKBOOK_UID=alice is not a numeric id/);
  });
});

// The switch needs root, as the container starts; elsewhere the pure choice above is what runs.
const asRoot = process.getuid?.() === 0;
describe.skipIf(!asRoot)('becomeWorkerUser (as root, in a child process)', () => {
  // Under /tmp itself: the test run's TMPDIR may be a 0700 folder the switched user cannot enter.
  const tmp = mkdtempSync('/tmp/worker-user-');
  chmodSync(tmp, 0o755);
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const module = resolve(import.meta.dirname, '../../src/workers/container-user.mjs');
  const child = (env: Record<string, string>) =>
    spawnSync(process.execPath, ['--input-type=module', '-e', `import { becomeWorkerUser } from ${JSON.stringify(module)}; console.log(becomeWorkerUser()); console.log(process.getuid(), process.getgid(), process.env.HOME);`], {
      env: { PATH: process.env.PATH, HOME: '/root', ...env },
      encoding: 'utf8',
    });

  it('becomes the owner of the runs folder and can write there', () => {
    const runs = join(tmp, 'owned');
    spawnSync('mkdir', [runs]);
    chownSync(runs, 4321, 4322);
    const r = child({ COOKBOOK_RUNS_DIR: runs });
    expect(r.stderr).toBe('');
    const [line, ids] = r.stdout.trim().split('\n');
    expect(line).toBe(`worker runs as uid:gid 4321:4322 (the owner of ${runs})`);
    expect(ids).toBe('4321 4322 /tmp'); // no passwd entry for 4321: HOME is a folder it can write
  });

  it('refuses, naming folder, owner and fix, when the chosen user cannot write there', () => {
    const runs = join(tmp, 'root-only');
    spawnSync('mkdir', [runs]);
    chmodSync(runs, 0o755);
    const r = child({ COOKBOOK_RUNS_DIR: runs, COOKBOOK_UID: '1000', COOKBOOK_GID: '1000' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`the worker (uid:gid 1000:1000) cannot write the runs folder ${runs} (./runs on the host, owned by 0:0): EACCES`);
    expect(r.stderr).toContain('set COOKBOOK_UID/COOKBOOK_GID to the owner of ./runs');
  });
});
