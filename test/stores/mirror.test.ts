// The run store's mirror of an object-store run (src/cookbook/stores/mirror.ts), two "hosts" (two
// cache folders) on one store: a real S3 server (SeaweedFS), and a folder (LocalStorage, with its
// conditional writes) for the same cases. Then a store that throttles every other request.
import { createServer, request, type Server } from 'node:http';
import { mkdtempSync, readFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RunStore } from '../../src/cookbook/run-store.js';
import { RunMirror, StoreConflictError } from '../../src/cookbook/stores/mirror.js';
import { S3Storage, s3Client } from '../../src/cookbook/stores/s3.js';
import { LocalStorage, type Storage } from '../../src/cookbook/stores/storage.js';
import { s3ServerForFile, type S3Server } from '../support/s3-server.js';

const URI = 's3://mirror-tests/runs/r1';
const saved = process.env.COOKBOOK_STORE_CACHE;
afterEach(() => {
  if (saved === undefined) delete process.env.COOKBOOK_STORE_CACHE;
  else process.env.COOKBOOK_STORE_CACHE = saved;
});

let s3: S3Server;
beforeAll(async () => {
  s3 = await s3ServerForFile({ buckets: ['mirror-tests'] });
}, 300_000);
afterAll(async () => {
  await s3?.close();
});

let prefixes = 0;
/** A fresh, empty store of each kind. */
const stores: Record<string, () => Storage> = {
  folder: () => new LocalStorage(mkdtempSync(join(tmpdir(), 'bucket-'))),
  s3: () => new S3Storage(`s3://mirror-tests/case-${process.pid}-${++prefixes}`, s3Client({ ...s3.env })),
};

/** A worker host: its own cache folder, its own mirror of the run. */
function host(storage: Storage): RunMirror {
  process.env.COOKBOOK_STORE_CACHE = mkdtempSync(join(tmpdir(), 'mirror-host-'));
  return new RunMirror(URI, storage);
}

const config = { model_name: 'tiny', learning_rate: 1e-4, log_path: URI };

/** The store of a run nested at `p` in `store`'s. */
const subStore = (store: Storage, p: string): Storage => (store instanceof S3Storage ? new S3Storage(store.url(p), s3Client({ ...s3.env })) : new LocalStorage(join((store as LocalStorage).root, p)));

for (const [kind, newStore] of Object.entries(stores)) describe(`run mirror on ${kind === 's3' ? 'an S3 bucket' : 'a folder'}`, () => {
  it('a run written on one host reads the same on another, blobs and records included', async () => {
    const bucket = newStore();
    const a = host(bucket);
    await a.pull();
    const sa = new RunStore(a.dir);
    sa.init({ workflowId: 'wf-1', kind: 'sl', config }, new Set(['learning_rate']));
    sa.writeMetrics({ step: 0, loss: 1.5 });
    sa.writeMetrics({ step: 1, loss: 1.25 });
    sa.writeCheckpoint({ name: '000001', batch: 1, state_path: 'tinker://m/weights/000001' });
    sa.writeBlob('rollouts/iteration_000001/group_0000.json', '{"g":1}');
    const requests = await a.push();
    expect(requests).toBeGreaterThan(0);
    // the bucket holds the run in the reference's layout
    expect((await bucket.list('')).map((o) => o.path)).toEqual(expect.arrayContaining(['config.json', 'metrics.jsonl', 'checkpoints.jsonl', '.cookbook/run.json']));

    const b = host(bucket);
    await b.pull();
    const sb = new RunStore(b.dir);
    expect(sb.read().workflowId).toBe('wf-1');
    expect(sb.readMetrics()).toEqual([{ step: 0, loss: 1.5 }, { step: 1, loss: 1.25 }]);
    expect(sb.readCheckpoints()[0].name).toBe('000001');
    expect(sb.readBlob('rollouts/iteration_000001/group_0000.json').toString()).toBe('{"g":1}');
    expect(readFileSync(join(b.dir, 'config.json'), 'utf8')).toBe(readFileSync(join(a.dir, 'config.json'), 'utf8'));

    // a step replaced after a restore on host B (rows of step 1 and later dropped) reaches host A whole
    sb.truncateMetrics(1);
    sb.writeMetrics({ step: 1, loss: 1.0 });
    await b.push();
    await a.pull();
    expect(new RunStore(a.dir).readMetrics()).toEqual([{ step: 0, loss: 1.5 }, { step: 1, loss: 1.0 }]);
    // nothing changed: a pull is one list request, a push none
    const before = a.stats.requests;
    await a.pull();
    expect(a.stats.requests - before).toBe(1);
    expect(await a.push()).toBe(0);
  });

  it('a write based on a stale copy is refused, not lost; the retry on a fresh pull succeeds', async () => {
    const bucket = newStore();
    const a = host(bucket);
    await a.pull();
    new RunStore(a.dir).init({ workflowId: 'wf-2', kind: 'sl', config }, new Set());
    await a.push();
    const b = host(bucket);
    await b.pull();
    new RunStore(a.dir).writeMetrics({ step: 0, loss: 2 });
    await a.push();
    // host B, not having pulled A's row (a zombie attempt), writes step 0 too
    new RunStore(b.dir).writeMetrics({ step: 0, loss: 3 });
    await expect(b.push()).rejects.toBeInstanceOf(StoreConflictError);
    // the store still holds A's row, once
    await a.pull();
    expect(new RunStore(a.dir).readMetrics()).toEqual([{ step: 0, loss: 2 }]);
    // B's retry starts from a fresh pull and rewrites its row over A's: one row for step 0
    await b.pull();
    const sb = new RunStore(b.dir);
    expect(sb.readMetrics()).toEqual([{ step: 0, loss: 2 }]);
    sb.writeMetrics({ step: 0, loss: 3 });
    await b.push();
    await a.pull();
    expect(new RunStore(a.dir).readMetrics()).toEqual([{ step: 0, loss: 3 }]);
  });

  it('logs of several hosts are merged, not overwritten', async () => {
    const bucket = newStore();
    const a = host(bucket);
    const b = host(bucket);
    await a.pull();
    await b.pull();
    appendFileSync(join(a.dir, 'logs.log'), 'a1\n');
    appendFileSync(join(b.dir, 'logs.log'), 'b1\n');
    await a.push();
    await b.push();
    appendFileSync(join(a.dir, 'logs.log'), 'a2\n');
    await a.pull(); // B's line arrives, A's unpushed line stays after it
    await a.push();
    await b.pull();
    expect(readFileSync(join(b.dir, 'logs.log'), 'utf8')).toBe('a1\nb1\na2\n');
    expect((await bucket.get('logs.log'))!.data.toString()).toBe('a1\nb1\na2\n');
  });

  it('a blob written again with the same bytes by another host is not a conflict', async () => {
    const bucket = newStore();
    const a = host(bucket);
    const b = host(bucket);
    await a.pull();
    await b.pull();
    new RunStore(a.dir).writeBlob('side_effects/x.json', '{"out":1}');
    new RunStore(b.dir).writeBlob('side_effects/x.json', '{"out":1}');
    await a.push();
    await b.push();
    new RunStore(b.dir).writeBlob('side_effects/y.json', '{"out":2}');
    await b.push();
    await a.pull();
    expect(new RunStore(a.dir).readBlob('side_effects/y.json').toString()).toBe('{"out":2}');
  });

  it('a run nested in another (a sweep point) is its own: the parent neither fetches nor sends its files', async () => {
    const bucket = newStore();
    const parent = host(bucket);
    await parent.pull();
    new RunStore(parent.dir).init({ workflowId: 'sweep', kind: 'sweep', config }, new Set());
    await parent.push();
    // a point's run, by its own mirror (another activity, another host)
    const point = new RunMirror(`${URI}/p1`, subStore(bucket, 'p1'));
    await point.pull();
    const sp = new RunStore(point.dir);
    sp.init({ workflowId: 'sweep/p1', kind: 'sl', config }, new Set());
    sp.writeMetrics({ step: 0, loss: 1 });
    await point.push();
    await parent.pull();
    expect(parent.nested).toEqual(['p1']);
    // the parent's next push leaves the point's files alone, although the folder is inside its own
    sp.writeMetrics({ step: 1, loss: 0.5 });
    expect(await parent.push()).toBe(0);
    await point.push();
    const reader = host(bucket);
    await reader.pull();
    expect(reader.nested).toEqual(['p1']);
  });

  it('a damaged object is refused by the run store as a damaged file is; a missing one is missing', async () => {
    const bucket = newStore();
    const a = host(bucket);
    await a.pull();
    const sa = new RunStore(a.dir);
    sa.init({ workflowId: 'wf-d', kind: 'sl', config }, new Set());
    sa.writeBlob('checkpoints/000004.tar', 'weights-4');
    sa.writeBlob('checkpoints/000008.tar', 'weights-8');
    await a.push();
    // The store's copy damaged (a bit flip behind the mirror's back), another deleted.
    await bucket.put('.cookbook/store/checkpoints/000008.tar', Buffer.from('weights-X'));
    await bucket.delete('.cookbook/store/checkpoints/000004.tar');
    const settle = process.env.COOKBOOK_STORE_SETTLE_S;
    process.env.COOKBOOK_STORE_SETTLE_S = '0.5'; // damage that stays is damage: not waited out for long here
    try {
      const b = host(bucket);
      await b.pull();
      const sb = new RunStore(b.dir);
      expect(() => sb.readBlob('checkpoints/000008.tar')).toThrow(/000008\.tar: damaged/);
      expect(sb.hasBlob('checkpoints/000004.tar')).toBe(false);
    } finally {
      if (settle === undefined) delete process.env.COOKBOOK_STORE_SETTLE_S;
      else process.env.COOKBOOK_STORE_SETTLE_S = settle;
    }
  });

  it('a pull that catches another host between a file and its records waits until the state is whole', async () => {
    const bucket = newStore();
    const a = host(bucket);
    await a.pull();
    const sa = new RunStore(a.dir);
    sa.init({ workflowId: 'wf-3', kind: 'sl', config }, new Set());
    sa.writeMetrics({ step: 0, loss: 1 });
    await a.push();
    sa.writeMetrics({ step: 1, loss: 0.5 });
    sa.writeMetrics({ step: 2, loss: 0.25 });
    // Another host's push half done: the records of two appends arrived, the file not yet.
    const sums = '.cookbook/sums/metrics.jsonl.sums';
    await bucket.put(sums, readFileSync(join(a.dir, sums)));
    const b = host(bucket);
    let waited = false;
    const pulled = b.pull().then(() => new RunStore(b.dir).readMetrics());
    // the rest of that push lands while B waits
    setTimeout(() => {
      waited = true;
      void a.push();
    }, 150);
    expect(await pulled).toEqual([{ step: 0, loss: 1 }, { step: 1, loss: 0.5 }, { step: 2, loss: 0.25 }]);
    expect(waited).toBe(true);
  });
});

/** An S3 front that answers every other request with 503 SlowDown, as a throttling store does. */
function throttling(target: string): Promise<{ url: string; throttled: () => number; server: Server }> {
  let n = 0;
  let throttled = 0;
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    if (n++ % 2 === 0) {
      throttled++;
      req.resume();
      res.writeHead(503, { 'content-type': 'application/xml' }).end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
      return;
    }
    const fwd = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    req.pipe(fwd);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, throttled: () => throttled, server })));
}

describe('run mirror: appends to a long file', () => {
  it('send only the new bytes, and a stale append is refused', async () => {
    const bucket = stores.s3();
    const a = host(bucket);
    await a.pull();
    const sa = new RunStore(a.dir);
    sa.init({ workflowId: 'wf-long', kind: 'sl', config }, new Set());
    sa.writeMetrics({ step: 0, note: 'x'.repeat(5 * 1024 * 1024 + 100) }); // a metrics.jsonl past 5 MiB
    await a.push();
    const b = host(bucket);
    await b.pull();
    sa.writeMetrics({ step: 1, loss: 0.5 });
    const sent = a.stats.bytes;
    await a.push();
    expect(a.stats.bytes - sent).toBeLessThan(64 * 1024); // the row and its records, not the 5 MiB before them
    await b.pull();
    const rows = new RunStore(b.dir).readMetrics();
    expect(rows.map((r) => r.step)).toEqual([0, 1]);
    expect((rows[0].note as string).length).toBe(5 * 1024 * 1024 + 100);
    // host B appends on a copy A has moved past: refused, not appended to A's
    const stale = host(bucket);
    await stale.pull();
    sa.writeMetrics({ step: 2, loss: 0.25 });
    await a.push();
    new RunStore(stale.dir).writeMetrics({ step: 2, loss: 9 });
    await expect(stale.push()).rejects.toBeInstanceOf(StoreConflictError);
    await b.pull();
    expect(new RunStore(b.dir).readMetrics().map((r) => r.loss ?? null)).toEqual([null, 0.5, 0.25]);
  });
});

describe('run mirror on a throttling store', () => {
  it('waits out 503 SlowDown with backoff: nothing lost, nothing doubled', async () => {
    const front = await throttling(s3.endpoint);
    try {
      // One attempt per request in the client: the mirror's own backoff does the waiting.
      const client = s3Client({ ...s3.env, AWS_ENDPOINT_URL_S3: front.url, AWS_MAX_ATTEMPTS: '1' });
      const prefix = `s3://mirror-tests/throttled-${process.pid}`;
      const a = host(new S3Storage(prefix, client));
      const waits: string[] = [];
      await a.pull({ onWait: (what) => waits.push(what) });
      const sa = new RunStore(a.dir);
      sa.init({ workflowId: 'wf-t', kind: 'sl', config }, new Set());
      for (let step = 0; step < 4; step++) {
        sa.writeMetrics({ step, loss: 1 / (step + 1) });
        await a.push({ onWait: (what) => waits.push(what) });
      }
      expect(front.throttled()).toBeGreaterThan(4);
      expect(waits.length).toBe(front.throttled());
      const b = host(new S3Storage(prefix, s3Client({ ...s3.env })));
      await b.pull();
      expect(new RunStore(b.dir).readMetrics()).toEqual([0, 1, 2, 3].map((step) => ({ step, loss: 1 / (step + 1) })));
    } finally {
      front.server.close();
    }
  });
});
