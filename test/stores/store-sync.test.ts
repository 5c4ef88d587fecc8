// The activities' side of runs in an object store (store-sync.ts): which runs an input names, and an
// activity wrapped as the worker wraps it, on a real S3 server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeRunsOf, withStoreSync } from '../../src/activities/store-sync.js';
import type { Activities } from '../../src/activities/types.js';
import { RunStore, type RunRef } from '../../src/cookbook/run-store.js';
import { S3Storage } from '../../src/cookbook/stores/s3.js';
import { s3ServerForFile, useS3Env, type S3Server } from '../support/s3-server.js';

describe('storeRunsOf', () => {
  it('the run an activity works for, and the runs it only reads', () => {
    const input = {
      run: { workflowId: 'w', kind: 'sl', logPath: 's3://b/runs/w/' },
      config: { log_path: 's3://b/runs/w', continue_from: { log_path: 's3://b/runs/parent', name: '000004' } },
      point: { name: 'p1', log_path: 's3://b/sweep/p1', metrics_log_path: 's3://b/sweep/p1/1-sl' },
      local: { logPath: '/data/runs/x', log_path: '/data/runs/y' },
    };
    const { writes, reads } = storeRunsOf([input]);
    expect([...writes]).toEqual(['s3://b/runs/w']);
    expect([...reads].sort()).toEqual(['s3://b/runs/parent', 's3://b/sweep/p1', 's3://b/sweep/p1/1-sl']);
  });

  it('an input without object-store runs names none', () => {
    const { writes, reads } = storeRunsOf([{ run: { logPath: '/tmp/r' }, text: 's3://not/a/path/key' }]);
    expect(writes.size + reads.size).toBe(0);
  });
});

describe('withStoreSync', () => {
  let s3: S3Server;
  let restoreEnv = () => {};
  beforeAll(async () => {
    s3 = await s3ServerForFile({ buckets: ['sync-tests'] });
    restoreEnv = useS3Env(s3);
  }, 300_000);
  afterAll(async () => {
    restoreEnv();
    await s3?.close();
  });

  it('a long activity sends its records while it runs, works in a local folder, and returns the URI', async () => {
    const every = process.env.COOKBOOK_STORE_PUSH_EVERY_S;
    process.env.COOKBOOK_STORE_PUSH_EVERY_S = '0.2';
    try {
      const uri = `s3://sync-tests/run-${process.pid}-${Date.now()}`;
      let release = () => {};
      const held = new Promise<void>((r) => (release = r));
      const seen: string[] = [];
      const activities = withStoreSync({
        async longActivity({ run }: { run: RunRef }) {
          seen.push(run.logPath);
          new RunStore(run.logPath).writeBlob('side_effects/op_0.json', '{"out":1}');
          await held; // a tool call, a sandbox run, …
          return { logPath: run.logPath, blob: `${run.logPath}/.cookbook/store/side_effects/op_0.json` };
        },
      } as unknown as Activities) as unknown as { longActivity(input: { run: RunRef }): Promise<{ logPath: string; blob: string }> };
      const running = activities.longActivity({ run: { workflowId: 'w', kind: 'rl', logPath: uri } });
      const store = new S3Storage(uri);
      for (let i = 0; !(await store.get('.cookbook/store/side_effects/op_0.json')); i++) {
        expect(i).toBeLessThan(200); // 20 s: the record is sent within a push period, not only at the end
        await new Promise((r) => setTimeout(r, 100));
      }
      release();
      const result = await running;
      expect(seen[0].startsWith('s3://')).toBe(false);
      expect(result).toEqual({ logPath: uri, blob: `${uri}/.cookbook/store/side_effects/op_0.json` });
    } finally {
      if (every === undefined) delete process.env.COOKBOOK_STORE_PUSH_EVERY_S;
      else process.env.COOKBOOK_STORE_PUSH_EVERY_S = every;
    }
  });
});
