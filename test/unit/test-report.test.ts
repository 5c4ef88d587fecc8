// The test runner's timing report (scripts/lib/test-report.mjs): per-file totals from vitest's JSON
// and the engine suite's JUnit XML, the helpers' spans beside them, the slowest files first.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: plain ESM tooling without types
import { fileDurations, slowestTable } from '../../scripts/lib/test-report.mjs';

type FileDuration = { file: string; suite: string; seconds: number; tests: number; spans: Record<string, number> };

describe('test timing report', () => {
  const dir = mkdtempSync(join(tmpdir(), 'test-report-'));
  const root = '/repo';
  writeFileSync(
    join(dir, 'vitest.json'),
    JSON.stringify({
      startTime: 0,
      testResults: [
        { name: '/repo/test/a.test.ts', startTime: 1_000, endTime: 31_000, assertionResults: [{}, {}] },
        { name: '/repo/test/b.test.ts', startTime: 33_000, endTime: 36_000, assertionResults: [{}] },
      ],
    }),
  );
  writeFileSync(
    join(dir, 'engine.xml'),
    '<testsuites><testsuite name="pytest" tests="3"><testcase classname="tests.test_x" name="t1" time="4.5" /><testcase classname="tests.test_x.TestY" name="t2" time="5.5" /><testcase classname="tests.test_z" name="t3" time="0.25" /></testsuite></testsuites>',
  );
  writeFileSync(
    join(dir, 'timings.jsonl'),
    [
      { file: '/repo/test/a.test.ts', category: 'stack start', at: 200, ms: 800 }, // a beforeAll, before vitest's startTime
      { file: '/repo/test/a.test.ts', category: 'stack start', at: 5_000, ms: 7_200 },
      { file: '/repo/test/a.test.ts', category: 'worker start', ms: 1_500 },
      { file: '/repo/test/a.test.ts', category: 'worker start', ms: 1_500 },
      { file: '/repo/test/b.test.ts', category: 'waits', ms: 2_000 },
    ]
      .map((l) => JSON.stringify(l))
      .join('\n') + '\n{"file": "/repo/test/a.te', // a line cut short by a killed process
  );
  const files: FileDuration[] = fileDurations({ root, vitestJson: join(dir, 'vitest.json'), engineXml: join(dir, 'engine.xml'), timings: join(dir, 'timings.jsonl') });

  it('totals each file of both suites, slowest first, with its spans summed and its import counted', () => {
    // a: from the run's start (1 s before its tests, 0.8 s of it a timed hook) to its end; b: from a's end (2 s of import) to its own.
    expect(files.map((f) => [f.file, f.suite, f.seconds, f.tests])).toEqual([
      ['test/a.test.ts', 'vitest', 31, 2],
      ['engine/tests/test_x.py', 'pytest', 10, 2],
      ['test/b.test.ts', 'vitest', 5, 1],
      ['engine/tests/test_z.py', 'pytest', 0.3, 1],
    ]);
    expect(files[0].spans).toEqual({ 'import and collect': 0.2, 'stack start': 8, 'worker start': 3 });
    expect(files[2].spans).toEqual({ 'import and collect': 2, waits: 2 });
  });

  it('prints the n slowest with the spans and what they leave', () => {
    const table: string = slowestTable(files, 2);
    const lines = table.split('\n');
    expect(lines[0]).toMatch(/^2 slowest test files \(of 4, 46 s in all/);
    expect(lines[1].trim().split(/\s{2,}/)).toEqual(['seconds', 'import and collect', 'stack start', 'worker start', 'rest', 'tests', 'file']);
    expect(lines[2].trim().split(/\s{2,}/)).toEqual(['31', '0', '8', '3', '20', '2', 'test/a.test.ts']);
    expect(lines[3].trim().split(/\s+/)).toEqual(['10', '10', '2', 'engine/tests/test_x.py']);
    expect(lines).toHaveLength(4);
  });
});

describe('test timing report, files side by side', () => {
  it('rebuilds the worker lanes: a file starts where the lane it follows ended', () => {
    const dir = mkdtempSync(join(tmpdir(), 'test-report-'));
    // Two processes: a (1-31 s) then c (34-40 s) in one, b (3-20 s) then d (22-30 s) in the other.
    writeFileSync(
      join(dir, 'vitest.json'),
      JSON.stringify({
        startTime: 0,
        testResults: [
          { name: '/repo/test/a.test.ts', startTime: 1_000, endTime: 31_000, assertionResults: [{}] },
          { name: '/repo/test/b.test.ts', startTime: 3_000, endTime: 20_000, assertionResults: [{}] },
          { name: '/repo/test/d.test.ts', startTime: 22_000, endTime: 30_000, assertionResults: [{}] },
          { name: '/repo/test/c.test.ts', startTime: 34_000, endTime: 40_000, assertionResults: [{}] },
        ],
      }),
    );
    const files: FileDuration[] = fileDurations({ root: '/repo', vitestJson: join(dir, 'vitest.json') });
    const byName = Object.fromEntries(files.map((f) => [f.file, [f.seconds, f.spans['import and collect']]]));
    expect(byName).toEqual({
      'test/a.test.ts': [31, 1],
      'test/b.test.ts': [20, 3],
      'test/d.test.ts': [10, 2],
      // the lane that ended last before it: a's (31 s), not d's (30 s)
      'test/c.test.ts': [9, 3],
    });
  });
});
