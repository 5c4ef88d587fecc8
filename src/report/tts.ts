// The TTS section of a report (`cookbook report` of a `cookbook tts` run folder): the reference's
// aggregate (tts_summary.json), how the step scores spread between decorative and true-thinking,
// self-verification steps beside the others, each problem's row (tts_per_problem.jsonl), and every
// step's text with its four early-exit confidences (tts_steps.jsonl).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProblemOutcome, TtsAggregate } from '../cookbook/tts/analysis.js';
import { DECORATIVE_TTS, HIGH_TTS, MID_TTS } from '../cookbook/tts/analysis.js';
import { TTS_FILES } from '../cookbook/tts/results.js';
import type { StepScore } from '../cookbook/tts/score.js';
import { esc, fmt } from './html.js';
import { ReportError, type RunData } from './load.js';

export interface TtsReport {
  label: string;
  summary: TtsAggregate;
  problems: ProblemOutcome[];
  steps: Array<StepScore & { problem_idx: number }>;
}

export const hasTtsResults = (logDir: string) => existsSync(join(logDir, TTS_FILES.summary));

function readLines<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l, i) => {
      try {
        return JSON.parse(l) as T;
      } catch (err) {
        throw new ReportError(`${path}:${i + 1} is not valid JSON: ${(err as Error).message}`);
      }
    });
}

export function loadTtsReport(run: RunData): TtsReport | null {
  if (!hasTtsResults(run.logDir)) return null;
  const path = join(run.logDir, TTS_FILES.summary);
  let summary: TtsAggregate;
  try {
    summary = JSON.parse(readFileSync(path, 'utf8')) as TtsAggregate;
  } catch (err) {
    throw new ReportError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
  return { label: run.label, summary, problems: readLines(join(run.logDir, TTS_FILES.perProblem)), steps: readLines(join(run.logDir, TTS_FILES.steps)) };
}

/** Where a step's score falls: the reference's thresholds. */
export const TTS_BANDS = [
  { name: `decorative (≤ ${DECORATIVE_TTS})`, keep: (t: number) => t <= DECORATIVE_TTS },
  { name: `low (${DECORATIVE_TTS} – ${MID_TTS})`, keep: (t: number) => t > DECORATIVE_TTS && t < MID_TTS },
  { name: `medium (${MID_TTS} – ${HIGH_TTS})`, keep: (t: number) => t >= MID_TTS && t < HIGH_TTS },
  { name: `true-thinking (≥ ${HIGH_TTS})`, keep: (t: number) => t >= HIGH_TTS },
];

const pct = (n: number, of: number) => (of > 0 ? `${((100 * n) / of).toFixed(1)}%` : '–');
const mean = (xs: readonly number[]) => (xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
const row = (cells: unknown[]) => `<tr>${cells.map((v) => (typeof v === 'number' ? `<td class="num">${esc(fmt(v))}</td>` : `<td>${esc(fmt(v))}</td>`)).join('')}</tr>`;
const tableOf = (head: string[], rows: unknown[][], cls = '') => `<table${cls ? ` class="${cls}"` : ''}><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map(row).join('')}</tbody></table>`;

/** A bar per band, its width the band's share of the steps. */
function bandsTable(scores: readonly number[]): string {
  const rows = TTS_BANDS.map((b) => {
    const n = scores.filter(b.keep).length;
    const width = scores.length > 0 ? Math.round((240 * n) / scores.length) : 0;
    return `<tr><td>${esc(b.name)}</td><td class="num">${n}</td><td class="num">${pct(n, scores.length)}</td><td><span class="tts-bar" style="display:inline-block;height:10px;width:${width}px;background:#5b7bb5"></span></td></tr>`;
  });
  return `<table class="tts-bands"><thead><tr><th>TTS band</th><th>steps</th><th>share</th><th></th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function stepsOf(r: TtsReport, problem: number): string {
  const steps = r.steps.filter((s) => s.problem_idx === problem);
  if (steps.length === 0) return '<p class="muted">no steps</p>';
  return tableOf(
    ['step', 'TTS', 'S1(1)', 'S0(1)', 'S1(0)', 'S0(0)', 'self-verification', 'text'],
    steps.map((s) => [s.step_index, s.tts, s.s1_c1, s.s0_c1, s.s1_c0, s.s0_c0, s.is_self_verification ? 'yes' : '', s.step_text]),
    'tts-steps',
  );
}

function oneRun(r: TtsReport, i: number): string {
  const s = r.summary;
  const summaryRows: unknown[][] = [
    ['problems', `${s.n_problems_succeeded}/${s.n_problems} succeeded (${s.n_problems_failed} failed)`],
    ['model accuracy (S1(1) of the last step > 0.5)', s.accuracy],
    ['steps', s.n_steps_total],
    ['mean steps per problem', s.mean_steps_per_problem],
    ['mean TTS', s.mean_tts],
    [`share with TTS ≥ ${HIGH_TTS}`, s['frac_high_tts_0.7']],
    [`share with TTS ≥ ${MID_TTS}`, s['frac_high_tts_0.3']],
    [`share with TTS ≤ ${DECORATIVE_TTS} (decorative)`, s['frac_decorative_0.005']],
    ['self-verification steps', s.n_self_verification],
    ['… of which decorative', `${s.n_sv_decorative} (${pct(s.n_sv_decorative, s.n_self_verification)})`],
  ];
  const sv = r.steps.filter((x) => x.is_self_verification).map((x) => x.tts);
  const other = r.steps.filter((x) => !x.is_self_verification).map((x) => x.tts);
  const kinds = tableOf(
    ['step kind', 'steps', 'mean TTS', 'decorative'],
    [
      ['self-verification', sv.length, mean(sv), pct(sv.filter((t) => t <= DECORATIVE_TTS).length, sv.length)],
      ['other', other.length, mean(other), pct(other.filter((t) => t <= DECORATIVE_TTS).length, other.length)],
    ],
  );
  const problemRows = r.problems.map((p) =>
    'error' in p
      ? [p.problem_idx, p.question, p.answer, `error: ${p.error}`, '', '', '', '', '', '']
      : [p.problem_idx, p.question, p.answer, p.model_correct ? 'yes' : 'no', p.n_steps, p.mean_tts, p.frac_high_tts, p.frac_decorative, p.n_self_verification, p.n_sv_decorative],
  );
  const details = r.problems
    .filter((p) => !('error' in p))
    .map((p) => `<details id="tts-${i}-${p.problem_idx}"><summary>problem ${p.problem_idx}: ${esc(p.question)}</summary>${stepsOf(r, p.problem_idx)}</details>`)
    .join('');
  return `<h3>${esc(r.label)} <span class="muted">(${esc(s.model)} · ${esc(s.dataset)})</span></h3>${tableOf(['', 'value'], summaryRows, 'tts-summary')}${bandsTable(r.steps.map((x) => x.tts))}${kinds}${tableOf(
    ['problem', 'question', 'answer', 'correct', 'steps', 'mean TTS', 'TTS ≥ 0.7', 'decorative', 'self-verif.', 'SV decorative'],
    problemRows,
    'tts-problems',
  )}${details}`;
}

/** The section, or '' when no run of the report has TTS results. */
export function renderTtsSection(reports: ReadonlyArray<TtsReport | null>): string {
  const present = reports.filter((r): r is TtsReport => r !== null);
  if (present.length === 0) return '';
  const intro =
    '<p class="muted">True-Thinking Score per reasoning step: ½(|S1(1) − S0(1)| + |S1(0) − S0(0)|), S_x(c) the probability of the answer after the CoT prefix with the step intact (x = 1) or perturbed (x = 0) and the steps before it intact (c = 1) or perturbed (c = 0). Near 0: decorative; ≥ 0.7: the step drives the answer (docs/tts.md).</p>';
  return `<h2 id="tts">True-Thinking Score</h2>${intro}${present.map(oneRun).join('')}`;
}
