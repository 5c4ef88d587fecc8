// The report's TTS section (report/tts.ts) from a TTS run folder's files: the aggregate, the steps
// per band, self-verification beside the other steps, a row per problem (an error row too), every
// step's confidences with its text escaped; a TTS run needs no training metrics to be reported.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { aggregate, problemSummary, type ProblemOutcome } from '../../src/cookbook/tts/analysis.js';
import { TTS_FILES } from '../../src/cookbook/tts/results.js';
import type { StepScore } from '../../src/cookbook/tts/score.js';
import { buildReportHtml } from '../../src/report/report.js';

const root = mkdtempSync(join(tmpdir(), 'tts-report-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const step = (i: number, tts: number, sv = false, text = `step ${i} text`): StepScore => ({ step_index: i, step_text: text, tts, s1_c1: 0.9, s0_c1: 0.9 - tts, s1_c0: 0.4, s0_c0: 0.4 - tts, is_self_verification: sv });
const jsonl = (rows: unknown[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join('');

function ttsRunDir(): string {
  const dir = join(root, 'tts-run');
  mkdirSync(dir, { recursive: true });
  const problems = [
    { q: 'What is 2+2?', a: '4', steps: [step(0, 0.001), step(1, 0.004, true, 'Wait, <think> & check'), step(2, 0.35), step(3, 0.8)] },
    { q: 'Half of 10?', a: '5', steps: [step(0, 0.1), step(1, 0.002, true)] },
  ];
  const outcomes: ProblemOutcome[] = problems.map((p, i) => problemSummary(p.q, p.a, p.steps, true, i));
  outcomes.push({ question: 'Broken', answer: '1', error: 'cannot convert float Infinity to integer', problem_idx: 2 });
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ model: 'tiny-qwen3', dataset: 'problems' }));
  writeFileSync(join(dir, TTS_FILES.perProblem), jsonl(outcomes));
  writeFileSync(join(dir, TTS_FILES.steps), jsonl(problems.flatMap((p, i) => p.steps.map((s) => ({ problem_idx: i, ...s })))));
  writeFileSync(join(dir, TTS_FILES.summary), JSON.stringify(aggregate(outcomes, 'tiny-qwen3', 'problems', 3)));
  return dir;
}

const rowsOf = (html: string, cls: string) => {
  const table = new RegExp(`<table class="${cls}">([\\s\\S]*?)</table>`).exec(html)![1];
  return [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].slice(1).map((m) => [...m[1].matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) => c[1]));
};

describe('report: TTS section', () => {
  it('renders the aggregate, the bands, the step kinds, each problem and each step, with no metrics needed', async () => {
    const html = await buildReportHtml([ttsRunDir()]);
    expect(html).toContain('<h2 id="tts">True-Thinking Score</h2>');
    expect(html).toContain('<a href="#tts">true-thinking score</a>');
    expect(html).not.toContain('no numeric metrics yet');
    expect(html).toContain('<td>tiny-qwen3</td>');
    // 6 steps: 3 decorative (0.001, 0.004, 0.002), 1 low (0.1), 1 medium (0.35), 1 true-thinking (0.8).
    expect(rowsOf(html, 'tts-bands').map((r) => r.slice(1, 3))).toEqual([['3', '50.0%'], ['1', '16.7%'], ['1', '16.7%'], ['1', '16.7%']]);
    const summary = Object.fromEntries(rowsOf(html, 'tts-summary').map(([k, v]) => [k, v]));
    expect(summary.problems).toBe('2/3 succeeded (1 failed)');
    expect(summary['self-verification steps']).toBe('2');
    expect(summary['… of which decorative']).toBe('2 (100.0%)');
    const problems = rowsOf(html, 'tts-problems');
    expect(problems.map((r) => r[0])).toEqual(['0', '1', '2']);
    expect(problems[2][3]).toBe('error: cannot convert float Infinity to integer');
    expect(problems[0].slice(4, 6)).toEqual(['4', '0.2888']);
    // Step text is escaped; a table of steps per problem, problem 0's with its four steps' confidences.
    expect(html).toContain('Wait, &lt;think&gt; &amp; check');
    const steps = rowsOf(html, 'tts-steps');
    expect(steps).toHaveLength(4);
    expect(html.match(/<table class="tts-steps">/g)).toHaveLength(2);
    expect(steps[3].slice(0, 6)).toEqual(['3', '0.8', '0.9', '0.1', '0.4', '-0.4']);
  });

  it('a run without TTS results and without metrics is still refused', async () => {
    const dir = join(root, 'empty-run');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), '{}');
    await expect(buildReportHtml([dir])).rejects.toThrow(/has no metrics yet/);
  });
});
