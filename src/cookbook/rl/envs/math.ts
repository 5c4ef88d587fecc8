// Math word-problem env (spec §3.1): the model answers in \boxed{}; format = a box is present,
// correctness = the boxed answer grades equal to the reference. Plus GSM8K answer extraction and a
// loader for the GSM8K JSONL format (`{"question": …, "answer": "… #### 42"}`).

import { DataFormatError } from '../../errors.js';
import { parseJsonlRows, readTextFile } from '../../jsonl.js';
import type { Message, Renderer } from '../../renderers/types.js';
import { extractBoxed, safeGrade, type Grader } from '../grading.js';
import { ProblemEnv, type ProblemEnvOptions } from '../problem-env.js';

export const MATH_QUESTION_SUFFIX = ' Write your answer in \\boxed{} format.';

export interface MathEnvOptions extends ProblemEnvOptions {
  grader?: Grader;
  /** Seconds per grading call. */
  timeout?: number;
}

export class MathEnv extends ProblemEnv {
  readonly grader: Grader;
  readonly timeout: number;

  constructor(
    readonly problem: string,
    readonly answer: string,
    renderer: Renderer,
    opts: MathEnvOptions = {},
  ) {
    super(renderer, opts);
    this.grader = opts.grader ?? 'sympy';
    this.timeout = opts.timeout ?? 1.0;
  }

  getQuestion(): string {
    return this.problem + MATH_QUESTION_SUFFIX;
  }

  checkFormat(content: string): boolean {
    try {
      extractBoxed(content);
      return true;
    } catch {
      return false;
    }
  }

  checkAnswer(content: string): boolean {
    let given: string;
    try {
      given = extractBoxed(content);
    } catch {
      return false;
    }
    return safeGrade(given, this.answer, this.grader, this.timeout);
  }

  getReferenceAnswer(): string {
    return this.answer;
  }

  static standardFewshotPrefix(): Message[] {
    return standardFewshotPrefix();
  }
}

/** The reference's one-shot example (a counting question answered in \boxed{}). */
export function standardFewshotPrefix(): Message[] {
  return [
    { role: 'user', content: "How many r's are in strawberry?" + MATH_QUESTION_SUFFIX },
    {
      role: 'assistant',
      content:
        "Let's spell the word out and number all the letters: 1) s 2) t 3) r 4) a 5) w 6) b 7) e 8) r 9) r 10) y. " +
        "We have r's at positions 3, 8, and 9. \\boxed{3}",
    },
  ];
}

/**
 * The final answer of a GSM8K solution: the last line starting with `####` (prefix, a leading
 * `:` and every comma removed), else the last `#### …` match anywhere (commas kept).
 */
export function extractGsm8kFinalAnswer(text: string): string {
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i].trim();
    if (line.startsWith('####')) {
      let content = line.slice(4).trim();
      if (content.startsWith(':')) content = content.slice(1).trim();
      return content.replaceAll(',', '').trim();
    }
  }
  const matches = [...text.matchAll(/####\s*(.+)/g)];
  if (matches.length > 0) return matches[matches.length - 1][1].trim();
  throw new Error('No GSM8K final answer found');
}

export interface Gsm8kProblem {
  question: string;
  /** The full worked solution as in the file. */
  solution: string;
  /** The extracted final answer. */
  answer: string;
  /** 1-based line in the source file. */
  line: number;
}

/** Parse GSM8K JSONL text; errors name `displayPath:line`. Blank lines are skipped. */
export function parseGsm8kJsonl(text: string, displayPath: string): Gsm8kProblem[] {
  return parseJsonlRows(text, displayPath, parseGsm8kRow, { trimLines: false });
}

/** Validate one GSM8K row (`{question, answer}`); `at` names it in errors. */
export function parseGsm8kRow(row: unknown, at: string, lineNo: number): Gsm8kProblem {
  if (row === null || typeof row !== 'object' || Array.isArray(row)) {
    throw new DataFormatError(`${at}: expected a JSON object with "question" and "answer"`);
  }
  const { question, answer } = row as Record<string, unknown>;
  if (typeof question !== 'string' || question.trim() === '') {
    throw new DataFormatError(`${at}: "question" must be a non-empty string`);
  }
  if (typeof answer !== 'string') throw new DataFormatError(`${at}: "answer" must be a string`);
  let final: string;
  try {
    final = extractGsm8kFinalAnswer(answer);
  } catch {
    throw new DataFormatError(`${at}: "answer" has no final answer line "#### <answer>"`);
  }
  if (final === '') throw new DataFormatError(`${at}: the "####" final answer is empty`);
  return { question, solution: answer, answer: final, line: lineNo };
}

export async function loadGsm8kJsonl(absPath: string, displayPath = absPath): Promise<Gsm8kProblem[]> {
  const text = await readTextFile(absPath, displayPath, (e) => `${displayPath}: cannot read GSM8K file (${e.message})`);
  const rows = parseGsm8kJsonl(text, displayPath);
  if (rows.length === 0) throw new DataFormatError(`${displayPath}: no problems in file`);
  return rows;
}
