// Rows of checkpoints saved with a TTL record when it runs out; `cookbook continue` never picks one
// that has expired (or is about to), as the backend deletes it then.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastStateCheckpoint, resolveContinuation } from '../../src/cli/continue.js';
import { EXPIRY_MARGIN_MS, rowExpired, rowExpiry } from '../../src/cookbook/checkpoint-expiry.js';
import { RunStore } from '../../src/cookbook/run-store.js';

const slConfig = { model_name: 'tiny-qwen3', lora_rank: 8, dataset: { builtin: 'example_chat', batch_size: 4 }, num_epochs: 1 };
const NOW = Date.parse('2030-01-01T12:00:00Z');
const HOUR = 3600_000;
const at = (ms: number) => new Date(ms).toISOString();

function parentRun(rows: Array<Record<string, unknown>>): string {
  const logPath = mkdtempSync(join(tmpdir(), 'cookbook-expiry-'));
  const store = new RunStore(logPath);
  store.init({ workflowId: 'sl-parent', kind: 'sl', config: slConfig }, new Set());
  for (const row of rows) store.writeCheckpoint(row as { name: string });
  return logPath;
}

describe('checkpoint row expiry', () => {
  it('a row gets expires_at = save time + ttl_seconds, none without a TTL', () => {
    expect(rowExpiry(7200, NOW)).toEqual({ expires_at: '2030-01-01T14:00:00.000Z' });
    expect(rowExpiry(null, NOW)).toEqual({});
    expect(rowExpiry(undefined, NOW)).toEqual({});
  });

  it('expired: past, or within the margin a load needs; rows without (or with an unreadable) expires_at never', () => {
    expect(rowExpired({ expires_at: at(NOW - 1) }, NOW)).toBe(true);
    expect(rowExpired({ expires_at: at(NOW + EXPIRY_MARGIN_MS - 1) }, NOW)).toBe(true);
    expect(rowExpired({ expires_at: at(NOW + EXPIRY_MARGIN_MS + 1000) }, NOW)).toBe(false);
    expect(rowExpired({}, NOW)).toBe(false);
    expect(rowExpired({ expires_at: null }, NOW)).toBe(false);
    expect(rowExpired({ expires_at: 'someday' }, NOW)).toBe(false);
  });

  it('continue skips expired rolling rows and continues from the newest live state checkpoint', () => {
    const dir = parentRun([
      { name: '000004', next_step: 5, state_path: 'tinker://r/weights/000004', sampler_path: 'tinker://r/sampler_weights/000004', expires_at: at(NOW + 6 * 24 * HOUR) },
      { name: 'rolling_000006', next_step: 6, state_path: 'tinker://r/weights/rolling_000006', rolling: true, expires_at: at(NOW - 1 * HOUR) },
      { name: 'rolling_000007', next_step: 7, state_path: 'tinker://r/weights/rolling_000007', rolling: true, expires_at: at(NOW - 0.5 * HOUR) },
      { name: 'eval', sampler_path: 'tinker://r/sampler_weights/eval' },
    ]);
    expect(lastStateCheckpoint(dir, NOW)?.name).toBe('000004');
    // Two hours earlier the rolling one was live and the newest.
    expect(lastStateCheckpoint(dir, NOW - 2 * HOUR)?.name).toBe('rolling_000007');
    // A final checkpoint has no TTL: always picked.
    const finished = parentRun([
      { name: 'rolling_000002', next_step: 2, state_path: 'tinker://r/weights/rolling_000002', rolling: true, expires_at: at(NOW - HOUR) },
      { name: 'final', next_step: 9, state_path: 'tinker://r/weights/final' },
    ]);
    expect(lastStateCheckpoint(finished, NOW)?.name).toBe('final');
  });

  it('resolveContinuation on the real clock: loads from the live row; with every state row expired, says so', () => {
    const now = Date.now();
    const dir = parentRun([
      { name: '000004', next_step: 5, state_path: 'tinker://r/weights/000004', expires_at: at(now + 24 * HOUR) },
      { name: 'rolling_000006', next_step: 6, state_path: 'tinker://r/weights/rolling_000006', rolling: true, expires_at: at(now - HOUR) },
    ]);
    const resolved = resolveContinuation(dir, [], { runsDir: mkdtempSync(join(tmpdir(), 'cookbook-expiry-runs-')) });
    expect(resolved.config.load_checkpoint_path).toBe('tinker://r/weights/000004');
    expect(resolved.config.continue_from).toMatchObject({ name: '000004', next_step: 5 });

    const gone = parentRun([{ name: 'rolling_000006', next_step: 6, state_path: 'tinker://r/weights/rolling_000006', rolling: true, expires_at: at(now - HOUR) }]);
    expect(() => resolveContinuation(gone, [])).toThrow(/has no checkpoint with a state_path to continue from \(all 1 that had one expired: their ttl_seconds ran out/);
  });
});
