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

const dir = join(import.meta.dirname, '..', 'fixtures', 'histories');
const fixtures = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

describe('replay of recorded histories', () => {
  it('has fixtures for every workflow kind that exists (the trainable ones, eval, eval_inspect, eval_schedule and tts)', () => {
    const kinds = new Set(fixtures.map((f) => f.split('-')[0]));
    expect([...kinds].sort()).toEqual([...Object.keys(TRAINABLE_KINDS), 'eval', 'eval_inspect', 'eval_schedule', 'tts'].sort());
  });

  for (const file of fixtures) {
    it(`replays ${file}`, async () => {
      const history = historyFromJSON(JSON.parse(readFileSync(join(dir, file), 'utf8')));
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file.replace(/\.json$/, ''));
    });
  }
});
