// `cookbook tts` end to end, as a user runs it (no TTY), against the real stack: progress lines,
// the summary table, the reference's files in the run folder, and `cookbook report` of the run with
// its TTS section (the fuller tier: two CLI processes; tts.test.ts runs the workflow in the gate).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TTS_FILES } from '../../src/cookbook/tts/results.js';
import { cookbookOn as cookbook } from '../support/cli.js';
import { startTestStack, withWorker, type TestStack } from '../support/stack.js';

describe('cookbook tts', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('scores a model: progress lines, the summary table, the files, and the report section', async () => {
    await withWorker(stack, async () => {
      const r = await cookbook(stack, ['tts', 'tiny-qwen3', '--limit', '1', '--set', 'max_tokens=16', '--set', 'temperature=1.0', '--id', 'tts-cli']);
      expect(r.err).not.toMatch(/error/i);
      expect(r.code).toBe(0);
      expect(r.out).toContain('started tts-cli: TTS of tiny-qwen3 on 1 problems (dataset problems)');
      expect(r.out).toMatch(/^tts: 1\/1 problems \(chunk 1\/1\) · \d+ steps scored · completed$/m);
      expect(r.out).toMatch(/^\| mean TTS \| \d\.\d{4} \|$/m);
      const logDir = join(stack.dir, 'runs', 'tts-cli');
      for (const f of Object.values(TTS_FILES)) expect(existsSync(join(logDir, f)), f).toBe(true);
      expect(JSON.parse(readFileSync(join(logDir, TTS_FILES.summary), 'utf8')).n_problems).toBe(1);

      const report = await cookbook(stack, ['report', logDir]);
      expect(report.code).toBe(0);
      const html = readFileSync(join(logDir, 'report.html'), 'utf8');
      expect(html).toContain('<h2 id="tts">True-Thinking Score</h2>');
      expect(html).toContain('class="tts-problems"');
    });
  });
});
