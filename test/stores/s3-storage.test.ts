// The Storage contract (src/cookbook/stores/storage.ts) on both stores: a local folder, and S3Storage
// on a real S3 server (SeaweedFS, test/support/s3-server.ts). Then what only S3 has: listings of more
// than one page, check()'s one-line reasons (missing bucket, wrong secret, nobody at the endpoint),
// and which failures count as transient (a store that is down) and which do not (wrong credentials).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTransientStoreError, S3Storage, s3Client } from '../../src/cookbook/stores/s3.js';
import { LocalStorage, StorageConfigError, StorageConflictError, type Storage } from '../../src/cookbook/stores/storage.js';
import { refusingPort } from '../support/free-port.js';
import { startS3Server, type S3Server } from '../support/s3-server.js';
import { fullTier } from '../support/tier.js';

const BUCKET = 'cookbook-storage-test';
let server: S3Server;
let fresh = 0;

beforeAll(async () => {
  server = await startS3Server({ buckets: [BUCKET] });
});
afterAll(async () => {
  await server?.close();
});

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (got: { data: Buffer } | undefined) => got?.data.toString('utf8');

/** A store of each kind, empty, under a root of its own (a prefix of the one bucket for S3). */
const stores: Array<[string, () => Storage]> = [
  ['LocalStorage', () => new LocalStorage(mkdtempSync(join(tmpdir(), 'storage-test-')))],
  ['S3Storage', () => new S3Storage(`s3://${BUCKET}/case-${++fresh}/run`, s3Client(server.env))],
];

describe.each(stores)('%s', (_kind, make) => {
  it('puts and gets objects; a missing one is undefined; a put replaces', async () => {
    const s = make();
    const etag = await s.put('a/b.json', bytes('{"x":1}'));
    expect(etag).not.toBe('');
    expect(await s.get('a/b.json')).toEqual({ data: Buffer.from('{"x":1}'), etag });
    expect(await s.get('a/missing.json')).toBeUndefined();
    expect(await s.get('nowhere/at/all')).toBeUndefined();
    const etag2 = await s.put('a/b.json', bytes('{"x":2}'));
    expect(etag2).not.toBe(etag);
    expect(text(await s.get('a/b.json'))).toBe('{"x":2}');
    // an empty object is an object
    await s.put('empty', new Uint8Array());
    expect((await s.get('empty'))?.data.length).toBe(0);
  });

  it('lists recursively (sorted, with sizes and the etags puts returned) and one level at a time', async () => {
    const s = make();
    const etags: Record<string, string> = {};
    for (const [path, body] of [
      ['metrics.jsonl', '{"step":0}\n'],
      ['.cookbook/run.json', '{}'],
      ['rollouts/iteration_000001/group_0000.json', '[1]'],
      ['rollouts/iteration_000002/group_0000.json', '[22]'],
      ['rolloutsX/other.json', 'x'],
    ]) {
      etags[path] = await s.put(path, bytes(body));
    }
    const all = await s.list('');
    expect(all.map((o) => o.path)).toEqual(['.cookbook/run.json', 'metrics.jsonl', 'rollouts/iteration_000001/group_0000.json', 'rollouts/iteration_000002/group_0000.json', 'rolloutsX/other.json']);
    for (const o of all) expect(o.etag).toBe(etags[o.path]);
    expect(all.find((o) => o.path === 'metrics.jsonl')?.size).toBe(11);
    // a prefix is a folder: `rollouts/` does not take in `rolloutsX/`, with or without the slash
    expect((await s.list('rollouts')).map((o) => o.path)).toEqual(['rollouts/iteration_000001/group_0000.json', 'rollouts/iteration_000002/group_0000.json']);
    expect((await s.list('rollouts/')).map((o) => o.path)).toEqual(['rollouts/iteration_000001/group_0000.json', 'rollouts/iteration_000002/group_0000.json']);
    expect(await s.list('nothing-here')).toEqual([]);
    expect(await s.listDir('')).toEqual({ dirs: ['.cookbook', 'rollouts', 'rolloutsX'], files: ['metrics.jsonl'] });
    expect(await s.listDir('rollouts')).toEqual({ dirs: ['iteration_000001', 'iteration_000002'], files: [] });
    expect(await s.listDir('rollouts/iteration_000002/')).toEqual({ dirs: [], files: ['group_0000.json'] });
    expect(await s.listDir('nothing-here')).toEqual({ dirs: [], files: [] });
  });

  it('deletes an object; deleting a missing one is no error', async () => {
    const s = make();
    await s.put('keep.txt', bytes('k'));
    await s.put('gone.txt', bytes('g'));
    await s.delete('gone.txt');
    expect(await s.get('gone.txt')).toBeUndefined();
    await s.delete('gone.txt');
    await s.delete('never/was.txt');
    expect((await s.list('')).map((o) => o.path)).toEqual(['keep.txt']);
  });

  it('writes conditionally: ifMatch needs the current etag, ifNoneMatch needs no object', async () => {
    const s = make();
    const first = await s.put('state.json', bytes('1'), { ifNoneMatch: true });
    await expect(s.put('state.json', bytes('other'), { ifNoneMatch: true })).rejects.toBeInstanceOf(StorageConflictError);
    const second = await s.put('state.json', bytes('2'), { ifMatch: first });
    // the etag the first writer read is stale now: its write loses, and says which object
    const lost = await s.put('state.json', bytes('stale'), { ifMatch: first }).catch((err: unknown) => err);
    expect(lost).toBeInstanceOf(StorageConflictError);
    expect((lost as Error).message).toContain(s.url('state.json'));
    expect(await s.get('state.json')).toEqual({ data: Buffer.from('2'), etag: second });
    // after a delete, a write on the etag read before it loses too, and the object can be created again
    await s.delete('state.json');
    await expect(s.put('state.json', bytes('late'), { ifMatch: second })).rejects.toBeInstanceOf(StorageConflictError);
    await s.put('state.json', bytes('3'), { ifNoneMatch: true });
    expect(text(await s.get('state.json'))).toBe('3');
  });

  it('check() passes on a usable store', async () => {
    await make().check();
  });
});

/** check()'s error: a StorageConfigError of one line naming the store. */
async function checkError(s: Storage): Promise<string> {
  const err = await s.check().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StorageConfigError);
  const message = (err as Error).message;
  expect(message).not.toContain('\n');
  expect(message).toContain(s.url().replace(/^file:\/\//, ''));
  return message;
}

describe('LocalStorage', () => {
  it('check(): a root that is a file is one clear line', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'storage-test-')), 'a-file');
    writeFileSync(file, 'not a folder');
    await checkError(new LocalStorage(join(file, 'run')));
    await checkError(new LocalStorage(file));
  });
});

describe('S3Storage on a real server', () => {
  it('lists past a page (more than 1,000 keys), recursively and one level', async () => {
    const s = new S3Storage(`s3://${BUCKET}/paged`, s3Client(server.env));
    const names = Array.from({ length: 1005 }, (_, i) => `f${String(i).padStart(4, '0')}`);
    // 16 puts at a time: the server, not the test, sets the pace
    for (let i = 0; i < names.length; i += 16) await Promise.all(names.slice(i, i + 16).map((n) => s.put(`d/${n}`, bytes(n))));
    await s.put('d/sub/x', bytes('x'));
    const all = await s.list('d');
    expect(all.map((o) => o.path)).toEqual([...names.map((n) => `d/${n}`), 'd/sub/x']);
    expect(await s.listDir('d')).toEqual({ dirs: ['sub'], files: names });
  });

  it('check(): a missing bucket, a wrong secret and an endpoint nobody listens on are each one clear line', async () => {
    expect(await checkError(new S3Storage('s3://no-such-bucket-here/run', s3Client(server.env)))).toMatch(/the bucket no-such-bucket-here does not exist/);
    const wrongSecret = { ...server.env, AWS_SECRET_ACCESS_KEY: `${server.env.AWS_SECRET_ACCESS_KEY}x` };
    const denied = await checkError(new S3Storage(`s3://${BUCKET}/run`, s3Client(wrongSecret)));
    expect(denied).toMatch(/access denied .*AWS_SECRET_ACCESS_KEY/);
    expect(denied).not.toContain(wrongSecret.AWS_SECRET_ACCESS_KEY);
    // the right secret again (same key id): a client of its own, not the one that was denied
    await new S3Storage(`s3://${BUCKET}/run`, s3Client(server.env)).check();
    const refusing = await refusingPort();
    try {
      const nobody = { ...server.env, AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${refusing.port}`, AWS_MAX_ATTEMPTS: '1' };
      expect(await checkError(new S3Storage(`s3://${BUCKET}/run`, s3Client(nobody)))).toMatch(/the store did not answer .*AWS_ENDPOINT_URL_S3/);
    } finally {
      refusing.release();
    }
  });

  it('wrong credentials and a lost conditional write are not transient failures', async () => {
    const s = new S3Storage(`s3://${BUCKET}/not-transient`, s3Client(server.env));
    await s.put('kept.txt', bytes('k'));
    const denied = await new S3Storage(`s3://${BUCKET}/not-transient`, s3Client({ ...server.env, AWS_SECRET_ACCESS_KEY: 'wrong' })).get('kept.txt').catch((err: unknown) => err);
    expect(denied).toBeInstanceOf(Error);
    expect((denied as Error).message).toMatch(/access denied/);
    expect(isTransientStoreError(denied)).toBe(false);
    // a lost conditional write is no reason to retry the same write either
    expect(isTransientStoreError(await s.put('kept.txt', bytes('x'), { ifNoneMatch: true }).catch((err: unknown) => err))).toBe(false);
  });

  // Last in the file: the server is down afterwards in the gate (a restart takes SeaweedFS 10-15 s).
  it(`a store that is down is a transient failure${fullTier ? ', and its data is there when it is back' : ''}`, async () => {
    const s = new S3Storage(`s3://${BUCKET}/outage`, s3Client({ ...server.env, AWS_MAX_ATTEMPTS: '1' }));
    await s.put('kept.txt', bytes('before the outage'));
    await server.stop();
    const down = await s.get('kept.txt').catch((err: unknown) => err);
    expect(down).toBeInstanceOf(Error);
    expect((down as Error).message).toMatch(/the store did not answer/);
    expect(isTransientStoreError(down)).toBe(true);
    expect(isTransientStoreError(await s.put('new.txt', bytes('n')).catch((err: unknown) => err))).toBe(true);
    if (!fullTier) return;
    await server.start();
    expect(text(await s.get('kept.txt'))).toBe('before the outage');
    expect(await s.get('new.txt')).toBeUndefined();
  });
});

