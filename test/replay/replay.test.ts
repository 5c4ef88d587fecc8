// Determinism gate: histories recorded from real runs of each workflow kind replay against the
// current workflow code. A change that breaks replay fails here; fix it with `patched()`, never by
// re-recording silently (re-record only for a deliberate, documented break: npm run record-histories).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { describe, expect, it } from 'vitest';
import { TRAINABLE_KINDS } from '../../src/cli/train.js';
import { workflowBundle } from '../../src/workers/worker.js';
import { once } from '../support/once.js';

const dir = join(import.meta.dirname, '..', 'fixtures', 'histories');
const fixtures = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

/**
 * Every history replayed by one replay worker, as a worker runs many workflows: its start-up (the
 * bundle loaded into its workflow context) is paid once, not once per history. What
 * Worker.runReplayHistory throws for one history is its result's error here.
 */
const replayed = once(async () => {
  const errors = new Map<string, Error | undefined>();
  const histories = fixtures.map((file) => ({ workflowId: file.replace(/\.json$/, ''), history: historyFromJSON(JSON.parse(readFileSync(join(dir, file), 'utf8'))) }));
  for await (const result of Worker.runReplayHistories({ workflowBundle: await workflowBundle() }, histories)) errors.set(result.workflowId, result.error);
  return errors;
});

describe('replay of recorded histories', () => {
  it('has fixtures for every workflow kind that exists (the trainable ones, eval, eval_inspect, eval_schedule and tts)', () => {
    const kinds = new Set(fixtures.map((f) => f.split('-')[0]));
    expect([...kinds].sort()).toEqual([...Object.keys(TRAINABLE_KINDS), 'eval', 'eval_inspect', 'eval_schedule', 'tts'].sort());
  });

  for (const file of fixtures) {
    it(`replays ${file}`, async () => {
      const errors = await replayed();
      const workflowId = file.replace(/\.json$/, '');
      expect(errors.has(workflowId)).toBe(true);
      const error = errors.get(workflowId);
      if (error) throw error;
    });
  }
});
