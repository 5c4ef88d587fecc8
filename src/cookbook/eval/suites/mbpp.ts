// MBPP (google-research-datasets/mbpp, config "sanitized", split "test"), as the reference's
// eval/benchmarks/mbpp.py: the task, its first test as an example and the instruction to answer
// with a ```python block; the response's code followed by every test of `test_list` runs as one
// program (15 s), which passes when it exits 0. `test_imports` is not run, as in the reference.
import { DataFormatError } from '../../errors.js';
import { pyGet } from './fields.js';
import { exampleId } from './gsm8k.js';
import { extractPythonCode, runVerdict, sha256, sharedRunner, type RunnerSource, type RunVerdict } from './code-exec.js';
import { buildMessages, NO_EFFECTS, type Suite } from './types.js';

const TIMEOUT_SECONDS = 15;

interface MbppTarget {
  tests: string[];
}

// Other suites import it from here too.
export { pyGet };

export const mbppPrompt = (task: string, exampleTest: string) =>
  `${task}\n\nExample test: \`${exampleTest}\`\n\nWrite a Python function that satisfies the requirements. Provide ONLY the function definition in a \`\`\`python code block.`;

/** The program the reference runs: the code, a blank line, the tests one per line. */
export const mbppProgram = (code: string, tests: readonly string[]) => `${code}\n\n${tests.join('\n')}`;

export function mbppSuite(runner: RunnerSource = sharedRunner): Suite {
  return {
    name: 'mbpp',
    description: 'basic Python programming; the answer code must pass the task’s assert tests in the sandbox',
    dataset: { hubId: 'google-research-datasets/mbpp', name: 'sanitized', split: 'test' },
    sample: 'mbpp',
    parseRow(row, at, systemPrompt) {
      // The sanitized config calls the task `prompt`, the full one `text`.
      const task = pyGet(row, 'prompt', pyGet(row, 'text', ''));
      const tests = pyGet(row, 'test_list', []);
      if (typeof task !== 'string' || task === '') throw new DataFormatError(`${at}: "prompt" (or "text") must be a non-empty string`);
      if (!Array.isArray(tests) || tests.length === 0 || !tests.every((t) => typeof t === 'string')) throw new DataFormatError(`${at}: "test_list" must be a non-empty list of strings`);
      const taskId = pyGet(row, 'task_id', null);
      if (taskId !== null && typeof taskId !== 'number' && typeof taskId !== 'string') throw new DataFormatError(`${at}: "task_id" must be a number or a string`);
      return {
        id: taskId !== null ? `mbpp_${taskId}` : exampleId('mbpp', task),
        messages: buildMessages(mbppPrompt(task, tests[0] as string), systemPrompt),
        target: { tests } satisfies MbppTarget,
      };
    },
    async grade(response, item, ctx = NO_EFFECTS) {
      const code = extractPythonCode(response);
      const program = mbppProgram(code, (item.target as MbppTarget).tests);
      const verdict = await ctx.once<RunVerdict>(['sandbox', 'tests'], `mbpp sha256:${sha256(program)} timeout:${TIMEOUT_SECONDS}`, () => runVerdict(runner(), program, {}, TIMEOUT_SECONDS));
      return { correct: verdict.passed, extracted: code };
    },
    expected: (item) => (item.target as MbppTarget).tests.join('\n'),
  };
}

export const mbpp = mbppSuite();
