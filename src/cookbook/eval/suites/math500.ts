// MATH-500 (HuggingFaceH4/MATH-500, split "test"): the problem plus the reference's instruction to
// box the answer; the last \boxed{} of the response is graded against the solution's by the math
// grader (rl/grading.ts, the reference's grade_answer).
import { DataFormatError } from '../../errors.js';
import { extractBoxed, gradeAnswer } from '../../rl/grading.js';
import { stringField } from './fields.js';
import { BOXED_SYSTEM_PROMPT, exampleId } from './gsm8k.js';
import { buildMessages, type Suite } from './types.js';

export const math500: Suite = {
  name: 'math500',
  description: 'competition math (Hendrycks MATH subset); boxed answer, math-equivalence grading',
  dataset: { hubId: 'HuggingFaceH4/MATH-500', name: null, split: 'test' },
  sample: 'math500',
  recommendedSystemPrompt: BOXED_SYSTEM_PROMPT,
  parseRow(row, at, systemPrompt) {
    const problem = stringField(row, 'problem', at);
    const solution = stringField(row, 'solution', at);
    let expected: string;
    try {
      expected = extractBoxed(solution);
    } catch {
      throw new DataFormatError(`${at}: "solution" has no \\boxed{…} answer`);
    }
    return { id: exampleId('math500', problem), messages: buildMessages(`${problem} Put your final answer in \\boxed{}.`, systemPrompt), target: expected };
  },
  grade(response, item) {
    let given: string;
    try {
      given = extractBoxed(response);
    } catch {
      return { correct: false, extracted: '' };
    }
    let correct: boolean;
    try {
      correct = gradeAnswer(given, item.target as string);
    } catch {
      correct = false;
    }
    // The reference logs str(given)[:200]: 200 code points, not UTF-16 units.
    return { correct, extracted: [...given].slice(0, 200).join('') };
  },
  expected: (item) => item.target as string,
};
