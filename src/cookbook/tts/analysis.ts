// The reference's numbers: a CoT's summary (TTSResult.summary()) and the aggregate over problems
// (analyze.py's tts_summary.json). As there, the aggregate reads the summaries' per-step scores,
// which are already rounded to 4 decimals.
import { pyRoundTo } from './py-format.js';
import type { StepScore } from './score.js';

/** TTS at or above: a true-thinking step (the paper's threshold); the aggregate also counts ≥ 0.3. */
export const HIGH_TTS = 0.7;
export const MID_TTS = 0.3;
/** TTS at or below: a decorative step. */
export const DECORATIVE_TTS = 0.005;

export interface ProblemSummary {
  question: string;
  answer: string;
  model_correct: boolean;
  n_steps: number;
  mean_tts: number;
  frac_high_tts: number;
  frac_decorative: number;
  n_self_verification: number;
  n_sv_decorative: number;
  per_step_tts: number[];
  problem_idx: number;
}

/** A problem the reference could not score: its exception's message instead of a summary. */
export interface ProblemError {
  question: string;
  answer: string;
  error: string;
  problem_idx: number;
}

export type ProblemOutcome = ProblemSummary | ProblemError;
export const isError = (p: ProblemOutcome): p is ProblemError => 'error' in p;

/** Python's `s[:n]` on a str: code points, not UTF-16 units. */
export const pyPrefix = (s: string, n: number) => [...s].slice(0, n).join('');

/** Python's sum() of floats: left to right from 0. */
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const fraction = (xs: readonly number[], keep: (x: number) => boolean) => (xs.length > 0 ? xs.filter(keep).length / xs.length : 0);

export function problemSummary(question: string, answer: string, steps: readonly StepScore[], modelCorrect: boolean, problemIdx: number): ProblemSummary {
  const tts = steps.map((s) => s.tts);
  const sv = steps.filter((s) => s.is_self_verification);
  return {
    question: pyPrefix(question, 100),
    answer,
    model_correct: modelCorrect,
    n_steps: steps.length,
    mean_tts: pyRoundTo(tts.length > 0 ? sum(tts) / tts.length : 0.0, 4),
    frac_high_tts: pyRoundTo(fraction(tts, (t) => t >= HIGH_TTS), 4),
    frac_decorative: pyRoundTo(fraction(tts, (t) => t <= DECORATIVE_TTS), 4),
    n_self_verification: sv.length,
    n_sv_decorative: sv.filter((s) => s.tts <= DECORATIVE_TTS).length,
    per_step_tts: tts.map((t) => pyRoundTo(t, 4)),
    problem_idx: problemIdx,
  };
}

export interface TtsAggregate {
  model: string;
  dataset: string;
  n_problems: number;
  n_problems_succeeded: number;
  n_problems_failed: number;
  n_problems_correct: number;
  accuracy: number;
  n_steps_total: number;
  mean_steps_per_problem: number;
  mean_tts: number;
  'frac_high_tts_0.7': number;
  'frac_high_tts_0.3': number;
  'frac_decorative_0.005': number;
  n_self_verification: number;
  n_sv_decorative: number;
  frac_sv_decorative: number;
}

export function aggregate(outcomes: readonly ProblemOutcome[], model: string, dataset: string, nProblems: number): TtsAggregate {
  const valid = outcomes.filter((o): o is ProblemSummary => !isError(o));
  const all = valid.flatMap((r) => r.per_step_tts);
  const nSv = sum(valid.map((r) => r.n_self_verification));
  const nSvDecorative = sum(valid.map((r) => r.n_sv_decorative));
  const nCorrect = valid.filter((r) => r.model_correct).length;
  return {
    model,
    dataset,
    n_problems: nProblems,
    n_problems_succeeded: valid.length,
    n_problems_failed: outcomes.length - valid.length,
    n_problems_correct: nCorrect,
    accuracy: valid.length > 0 ? nCorrect / valid.length : 0,
    n_steps_total: all.length,
    mean_steps_per_problem: valid.length > 0 ? all.length / valid.length : 0,
    mean_tts: all.length > 0 ? sum(all) / all.length : 0,
    'frac_high_tts_0.7': fraction(all, (t) => t >= HIGH_TTS),
    'frac_high_tts_0.3': fraction(all, (t) => t >= MID_TTS),
    'frac_decorative_0.005': fraction(all, (t) => t <= DECORATIVE_TTS),
    n_self_verification: nSv,
    n_sv_decorative: nSvDecorative,
    frac_sv_decorative: nSv > 0 ? nSvDecorative / nSv : 0,
  };
}
