// Which runs an activity's input names, for the pull before it and the push after it (store-sync.ts).
import { describe, expect, it } from 'vitest';
import { storeRunsOf } from '../../src/activities/store-sync.js';

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
