#!/usr/bin/env node
// `npm test`: the gate CI runs, also as the first command on a fresh clone. Installs the node
// modules when missing (npm's cache in ~/.npm) and what the suites need outside the clone (the
// Temporal CLI, the engine's Python environment, the official SDKs and the Python reference, the
// S3 server the storage tests use, all cached under ~/.cache/durable-cookbook), then runs the
// engine's pytest suite and the TypeScript vitest suite, prints the slowest test files and where
// their time went (and writes every file's figures to test-results/durations.json), and ends with
// one line `N passed, N failed` over both.
// Modes (first argument): `full` (`npm run test:full`: the fuller tier too, docs/testing.md), `unit`
// (`npm run test:unit`: the node modules and the in-process vitest suites only, so it too works as a
// fresh clone's first command), `ts` and `engine` (one of the two suites; more arguments go to it).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureTemporalCli } from '../src/stack/temporal-bin.mjs';
import { ensureEngineEnv } from '../src/stack/engine-env.mjs';
import { ensureSeaweedFs } from '../src/stack/seaweedfs.mjs';
import { ensureReferenceEnv } from './lib/reference-env.mjs';
import { runEngineTests } from './lib/engine-test.mjs';
import { ensureNodeModules } from './lib/node-modules.mjs';
import { fileDurations, slowestTable, writeDurations } from './lib/test-report.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const mode = process.argv[2]; // optional: "full", "engine", "ts", or "unit" (the in-process suites, no servers)
const full = mode === 'full';
const only = full ? undefined : mode;
const UNIT_SUITES = ['test/unit', 'test/cookbook', 'test/replay'];
const extra = process.argv.slice(3);
const out = mkdtempSync(join(tmpdir(), 'cookbook-test-results-'));
// The fuller tier's files and pytest marks; the shared stack for files that kill no server; the spans
// the test helpers time (test/support/timing.ts).
process.env.COOKBOOK_TEST_TIER = full ? 'full' : 'gate';
if (only !== 'unit') process.env.COOKBOOK_TEST_SHARED_STACK = '1';
process.env.COOKBOOK_TEST_TIMINGS = join(out, 'timings.jsonl');
// Two test files run at once (vitest.config.ts): an engine's second intra-op thread would only spin
// against the other file's processes on a 2-core machine.
process.env.TINKER_ENGINE_THREADS ??= '1';

// Stage timings are printed again beside the totals, so a CI log's tail says where the time went.
const stages = [];
const step = (msg) => {
  stages.push({ msg, at: Date.now() });
  console.log(`\n=== ${msg}`);
};
const stageTimings = () =>
  stages.map((s, i) => `${s.msg}: ${Math.round(((stages[i + 1]?.at ?? Date.now()) - s.at) / 1000)} s`).join(' · ');
step('installing test dependencies (cached)');
// The engine suite reads the shipped tokenizers from node_modules too.
ensureNodeModules(root, console.log);
if (only !== 'unit') {
  process.env.TEMPORAL_CLI = await ensureTemporalCli({ log: console.log });
  await ensureEngineEnv();
}
// The S3 server of the object-store tests (test/support/s3-server.ts): built from source once (needs Go).
if (only !== 'engine' && only !== 'unit') console.log(`SeaweedFS (S3 server for the storage tests): ${await ensureSeaweedFs({ log: console.log })}`);
// The Python reference for the parity suite (test/parity), sharing the engine venv's PyTorch.
if (only !== 'engine' && only !== 'unit') await ensureReferenceEnv();

const totals = { passed: 0, failed: 0, skipped: 0 };
let failedSuites = 0;

// The engine suite keeps about one of two cores busy (its tests wait on engines they start), so in
// the gate it runs beside vitest, its output kept in a file and printed when it ends.
let engineSuite;
let engineSeconds;
if (only !== 'ts' && only !== 'unit') {
  const beside = only !== 'engine';
  const logFile = beside ? join(out, 'engine.log') : undefined;
  const began = Date.now();
  step(beside ? 'engine suite (pytest), beside the TypeScript suite: its output follows when it ends' : 'engine suite (pytest)');
  engineSuite = runEngineTests({ junitXml: join(out, 'engine.xml'), logFile, extraArgs: [...(full ? [] : ['-m', 'not full']), ...(only === 'engine' ? extra : [])] }).then((r) => {
    if (logFile) console.log(`\n=== engine suite (pytest) ended after ${Math.round((Date.now() - began) / 1000)} s; its output:\n${readFileSync(logFile, 'utf8')}`);
    const xml = existsSync(join(out, 'engine.xml')) ? readFileSync(join(out, 'engine.xml'), 'utf8') : '';
    const attr = (name) => Number((xml.match(new RegExp(`<testsuite[^>]*\\b${name}="(\\d+)"`)) ?? [])[1] ?? 0);
    const tests = attr('tests'), failures = attr('failures') + attr('errors'), skipped = attr('skipped');
    totals.passed += tests - failures - skipped;
    totals.failed += failures;
    totals.skipped += skipped;
    if (r !== 0) failedSuites++;
    engineSeconds = Math.round((Date.now() - began) / 1000);
  });
}

if (only !== 'engine') {
  step('TypeScript suite (vitest)');
  const json = join(out, 'vitest.json');
  // Asynchronous, so that the engine suite's promise settles (and prints) while vitest runs.
  const r = await new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${json}`, ...(only === 'unit' ? [...UNIT_SUITES, ...extra] : only === 'ts' ? extra : [])], {
      cwd: root,
      stdio: 'inherit',
      env: process.env,
    });
    child.on('error', () => resolve(1));
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
  if (existsSync(json)) {
    const report = JSON.parse(readFileSync(json, 'utf8'));
    totals.passed += report.numPassedTests;
    totals.failed += report.numFailedTests;
    totals.skipped += report.numPendingTests + report.numTodoTests;
    if (report.numFailedTestSuites > 0 && report.numFailedTests === 0) totals.failed += report.numFailedTestSuites;
  } else {
    totals.failed += 1;
  }
  if (r !== 0) failedSuites++;
}
if (engineSuite) {
  if (only !== 'engine') step('waiting for the engine suite (pytest)');
  await engineSuite;
}

const durations = fileDurations({ root, vitestJson: join(out, 'vitest.json'), engineXml: join(out, 'engine.xml'), timings: process.env.COOKBOOK_TEST_TIMINGS });
if (durations.length > 0) {
  writeDurations(join(root, 'test-results', 'durations.json'), durations);
  console.log(`\n${slowestTable(durations)}\n(every file: test-results/durations.json)`);
}
rmSync(out, { recursive: true, force: true });
console.log(`\n${stageTimings()}${engineSeconds !== undefined && only !== 'engine' ? ` (the engine suite took ${engineSeconds} s of it)` : ''}`);
if (failedSuites > 0 && totals.failed === 0) totals.failed = failedSuites;
console.log(`\n${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`);
process.exit(totals.failed > 0 || failedSuites > 0 ? 1 : 0);
