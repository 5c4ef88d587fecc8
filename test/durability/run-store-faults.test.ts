// Faults of the disk under a run directory (run-store.ts): damaged files are refused naming file
// and line, a crash's torn write is never read back, and a full disk fails a write with ENOSPC
// while everything committed stays as it was — until space returns and writes go on.
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pyJsonDumps } from '../../src/cookbook/pyjson.js';
import { RunStore, RunStoreDamagedError, RunStoreWriteError } from '../../src/cookbook/run-store.js';
import { flipBit } from '../support/damage.js';

const fresh = () => new RunStore(mkdtempSync(join(tmpdir(), 'cookbook-store-faults-')));
const sums = (s: RunStore, name: string) => join(s.logPath, '.cookbook', 'sums', name);

function withRows(s: RunStore, steps: number): RunStore {
  s.init({ workflowId: 'faults', kind: 'sl', config: { learning_rate: 1e-4, lora_rank: 8 } }, new Set(['learning_rate']));
  for (let step = 0; step < steps; step++) s.writeMetrics({ step, loss: 10 - step, lr: 1e-4 });
  s.writeCheckpoint({ name: '000002', batch: 2, epoch: 0, state_path: 'tinker://r/weights/000002' });
  s.writeCheckpoint({ name: '000004', batch: 4, epoch: 0, state_path: 'tinker://r/weights/000004' });
  return s;
}

/** Replaces `from` by `to` (same length) at its first occurrence, in place: a bit-flip-like edit. */
function spoil(file: string, from: string, to: string): void {
  const text = readFileSync(file, 'latin1');
  const at = text.indexOf(from);
  expect(at, `${from} in ${file}`).toBeGreaterThanOrEqual(0);
  expect(to).toHaveLength(from.length);
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.from(to, 'latin1'), 0, to.length, at);
  closeSync(fd);
}

const damaged = (fn: () => unknown): RunStoreDamagedError => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(RunStoreDamagedError);
    return err as RunStoreDamagedError;
  }
  throw new Error('expected the damage to be refused');
};

describe('run store: damaged files are refused, naming file and line', () => {
  it('a changed metrics row (still valid JSON) is refused by readers and by rewrites', () => {
    const s = withRows(fresh(), 6);
    spoil(s.metricsJsonl, '"loss": 7.0', '"loss": 1.0'); // row 4 (step 3)
    const err = damaged(() => s.readMetrics());
    expect(err.message).toContain(`${s.metricsJsonl}:4: damaged`);
    expect(err.line).toBe(4);
    expect(damaged(() => s.truncateMetrics(2)).line).toBe(4);
    expect(damaged(() => s.writeMetrics({ step: 1, loss: 0 })).line).toBe(4); // a replace reads every row
  });

  it('a truncated metrics file is refused, naming the first line lost', () => {
    const s = withRows(fresh(), 6);
    const text = readFileSync(s.metricsJsonl, 'utf8');
    const lines = text.split('\n');
    truncateSync(s.metricsJsonl, Buffer.byteLength(lines.slice(0, 3).join('\n') + '\n') + 5); // 3 rows and a bit
    const err = damaged(() => s.readMetrics());
    expect(err.message).toMatch(/metrics\.jsonl:4: damaged: the file is truncated: 6 lines were written, 3 remain/);
    // A writer does not build on it either.
    expect(damaged(() => s.writeMetrics({ step: 6, loss: 0 })).line).toBe(4);
  });

  it('a checkpoints row, run.json, config.json, a blob and a rollout record are checked too', () => {
    const s = withRows(fresh(), 5);
    s.writeBlob('rollouts/batch_000001/group_0000.json', JSON.stringify({ tokens: [1, 2, 3] }));
    s.writeRolloutRecord({ format: 'rollout_record/v1', step: 1, split: 'train', groups: [] });
    spoil(s.checkpointsJsonl, '000004', '000005');
    expect(damaged(() => s.readCheckpoints()).message).toContain(`${s.checkpointsJsonl}:2: damaged`);

    const record = join(s.logPath, '.cookbook', 'run.json');
    spoil(record, 'faults', 'fau1ts');
    expect(damaged(() => s.read()).message).toMatch(/run\.json: damaged: its content does not match the checksum/);
    // init of the same workflow (a retried initRun) reads the record: refused, not overwritten.
    expect(damaged(() => s.init({ workflowId: 'faults', kind: 'sl', config: {} }, new Set())).file).toBe(record);

    spoil(s.configJson, '8', '9');
    expect(damaged(() => s.readConfig()).file).toBe(s.configJson);

    const blob = join(s.logPath, '.cookbook', 'store', 'rollouts', 'batch_000001', 'group_0000.json');
    flipBit(blob, 5, 0x04);
    expect(damaged(() => s.readBlob('rollouts/batch_000001/group_0000.json')).file).toBe(blob);
    truncateSync(blob, 4);
    expect(damaged(() => s.readBlob('rollouts/batch_000001/group_0000.json')).message).toMatch(/4 bytes where \d+ were written/);
    // The blob directory holds the blobs only (the records live under .cookbook/sums).
    expect(readdirSync(join(s.logPath, '.cookbook', 'store', 'rollouts', 'batch_000001'))).toEqual(['group_0000.json']);

    const rollout = join(s.logPath, '.cookbook', 'store', 'rollout_records', 'iteration_000001.json');
    spoil(rollout, '"step":1', '"step":7');
    expect(damaged(() => s.readRolloutRecords()).file).toBe(rollout);
  });

  it('files without records (an older run dir, a hand-made one) are read as before; a broken line is named', () => {
    const s = fresh();
    writeFileSync(s.metricsJsonl, '{"step": 0, "loss": NaN}\n{"step": 1, "loss": 2.0}\n');
    expect(s.readMetrics()).toEqual([{ step: 0, loss: null }, { step: 1, loss: 2 }]);
    s.writeMetrics({ step: 2, loss: 1 }); // starts recording from what is there
    expect(s.readMetrics().map((r) => r.step)).toEqual([0, 1, 2]);
    expect(existsSync(sums(s, 'metrics.jsonl.sums'))).toBe(true);

    const broken = fresh();
    writeFileSync(broken.checkpointsJsonl, '{"name": "a"}\n{"name": \n{"name": "c"}\n');
    expect(damaged(() => broken.readCheckpoints()).message).toContain(`${broken.checkpointsJsonl}:2: damaged: not valid JSON`);
  });
});

describe('run store: a write cut short by a crash is never read back', () => {
  it('a torn last line and a line whose record was not written are skipped, then removed by the next write', () => {
    const s = withRows(fresh(), 4);
    const committed = s.readMetrics();
    const before = readFileSync(s.metricsJsonl);
    writeFileSync(s.metricsJsonl, Buffer.concat([before, Buffer.from('{"step": 4, "loss": 6')])); // crash mid-append
    expect(s.readMetrics()).toEqual(committed);
    writeFileSync(s.metricsJsonl, Buffer.concat([before, Buffer.from('{"step": 4, "loss": 6.0, "lr": 0.0001}\n')])); // crash before its record
    expect(s.readMetrics()).toEqual(committed);
    // The retried activity writes step 4 again; the file reads as one clean history.
    s.writeMetrics({ step: 4, loss: 6, lr: 1e-4 });
    expect(s.readMetrics().map((r) => r.step)).toEqual([0, 1, 2, 3, 4]);
    expect(readFileSync(s.metricsJsonl, 'utf8').endsWith('"lr": 0.0001}\n')).toBe(true);
    expect(readFileSync(s.metricsJsonl, 'utf8').split('\n')).toHaveLength(6);
  });

  it('a rewrite interrupted before or after the file was replaced reads as one of the two states', () => {
    const s = withRows(fresh(), 5);
    const records = sums(s, 'metrics.jsonl.sums');
    const oldData = readFileSync(s.metricsJsonl);
    const oldSums = readFileSync(records);
    s.truncateMetrics(3); // the rewrite, done
    const newData = readFileSync(s.metricsJsonl);
    const newSums = readFileSync(records);

    // Crash after the file's rename, before the records': new data, old records, new ones pending.
    writeFileSync(records, oldSums);
    writeFileSync(`${records}.next`, newSums);
    expect(s.readMetrics().map((r) => r.step)).toEqual([0, 1, 2]);
    s.writeMetrics({ step: 3, loss: 7 }); // settles: the pending records are the file's
    expect(s.readMetrics().map((r) => r.step)).toEqual([0, 1, 2, 3]);
    expect(existsSync(`${records}.next`)).toBe(false);

    // Crash before the file's rename: old data, old records, new ones pending.
    writeFileSync(s.metricsJsonl, oldData);
    writeFileSync(records, oldSums);
    writeFileSync(`${records}.next`, newSums);
    expect(s.readMetrics().map((r) => r.step)).toEqual([0, 1, 2, 3, 4]);
    s.truncateMetrics(3); // the retried rollback
    expect(s.readMetrics().map((r) => r.step)).toEqual([0, 1, 2]);
    expect(readFileSync(s.metricsJsonl)).toEqual(newData);
  });
});

// ------------------------------------------------------------------------------------ full disk

const mountPoint = mkdtempSync(join(tmpdir(), 'cookbook-small-disk-'));
let mounted = false;
let whyNot = '';

beforeAll(() => {
  if (process.getuid?.() !== 0) {
    whyNot = 'a full disk is simulated with a small tmpfs, which needs root to mount';
    return;
  }
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mountPoint], { encoding: 'utf8' });
  if (r.status !== 0) whyNot = `could not mount a tmpfs to simulate a full disk: ${(r.stderr || r.error?.message || '').trim()}`;
  else mounted = true;
});

afterAll(() => {
  if (mounted) execFileSync('umount', ['-l', mountPoint]);
  rmSync(mountPoint, { recursive: true, force: true });
});

/** Writes a filler file until the filesystem refuses another byte. */
function fill(dir: string): string {
  const filler = join(dir, 'filler');
  const fd = openSync(filler, 'w');
  try {
    for (const size of [1 << 16, 1 << 12, 1]) {
      const chunk = Buffer.alloc(size);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (err) {
        expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
      }
    }
  } finally {
    closeSync(fd);
  }
  return filler;
}

/** Every file under a directory with its bytes (what a reader could see). */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(p.slice(dir.length + 1), readFileSync(p).toString('base64'));
    }
  };
  walk(dir);
  return out;
}

const enospc = (fn: () => unknown, file: string): void => {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(RunStoreWriteError);
  expect((thrown as RunStoreWriteError).code).toBe('ENOSPC');
  expect((thrown as Error).message).toContain(`could not write ${file}: no space left on device (ENOSPC)`);
};

describe('run store: a full disk', () => {
  it('fails each write with ENOSPC, keeps what was committed, leaves nothing half-written, and writes go on once space returns', (ctx) => {
    if (!mounted) {
      console.warn(`skipped: ${whyNot}`);
      ctx.skip();
    }
    const logPath = join(mountPoint, 'run');
    mkdirSync(logPath);
    const s = withRows(new RunStore(logPath), 10);
    s.writeBlob('rollouts/batch_000001/group_0000.json', JSON.stringify({ tokens: [1, 2, 3] }));
    // Bring metrics.jsonl to 20 bytes short of a page, so that the next row can only be written in part.
    const page = 4096;
    const room = page - (statSync(s.metricsJsonl).size % page);
    const probe = pyJsonDumps({ step: 10, loss: 0.5, note: '' }, { floatKeys: (k) => k !== 'step' }).length + 1;
    const pad = room - 20 - probe >= 0 ? room - 20 - probe : room + page - 20 - probe;
    s.writeMetrics({ step: 10, loss: 0.5, note: 'x'.repeat(pad) });
    expect(page - (statSync(s.metricsJsonl).size % page)).toBe(20);
    const committed = { metrics: s.readMetrics(), checkpoints: s.readCheckpoints(), record: s.read() };
    const filler = fill(mountPoint);
    const before = snapshot(logPath);

    enospc(() => s.writeMetrics({ step: 11, loss: 0.25, note: 'y'.repeat(200) }), s.metricsJsonl); // written in part, undone
    enospc(() => s.writeMetrics({ step: 3, loss: 0.25, note: 'y'.repeat(5000) }), s.metricsJsonl); // a replace
    enospc(() => s.truncateMetrics(5), s.metricsJsonl);
    enospc(() => s.writeCheckpoint({ name: '000011', batch: 11, epoch: 0, state_path: 'tinker://r/weights/000011', pad: 'z'.repeat(5000) }), s.checkpointsJsonl);
    enospc(() => s.writeBlob('rollouts/batch_000002/group_0000.json', 'b'.repeat(10_000)), join(logPath, '.cookbook', 'store', 'rollouts', 'batch_000002', 'group_0000.json'));
    const other = new RunStore(join(mountPoint, 'other'));
    expect(() => other.init({ workflowId: 'other', kind: 'sl', config: { pad: 'c'.repeat(10_000) } }, new Set())).toThrow(RunStoreWriteError);
    expect(existsSync(join(mountPoint, 'other', '.cookbook', 'run.json'))).toBe(false); // not claimed half-way

    // Byte for byte what was committed: no partial line, no temp file, no half-written blob.
    expect(snapshot(logPath)).toEqual(before);
    expect({ metrics: s.readMetrics(), checkpoints: s.readCheckpoints(), record: s.read() }).toEqual(committed);

    unlinkSync(filler);
    s.writeMetrics({ step: 11, loss: 0.25 });
    s.writeCheckpoint({ name: '000011', batch: 11, epoch: 0, state_path: 'tinker://r/weights/000011' });
    s.writeBlob('rollouts/batch_000002/group_0000.json', 'b'.repeat(100));
    other.init({ workflowId: 'other', kind: 'sl', config: {} }, new Set());
    expect(s.readMetrics().map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(s.readMetrics().slice(0, 11)).toEqual(committed.metrics);
    expect(s.readCheckpoints().map((c) => c.name)).toEqual(['000002', '000004', '000011']);
    expect(s.readBlob('rollouts/batch_000002/group_0000.json').toString()).toBe('b'.repeat(100));
    s.truncateMetrics(5);
    expect(s.readMetrics().map((r) => r.step)).toEqual([0, 1, 2, 3, 4]);
    expect(other.read().workflowId).toBe('other');
  });
});
