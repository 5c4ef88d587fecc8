// SDFT's evaluation (the reference's recipes/sdft/eval.py, the paper's methodology): science MCQ
// answers by exact match on the extracted letter, tool use by exact match on the Action names (as
// a multiset) and the merged Action Input JSON. Used as graders of the custom sampling evaluator.

/** extract_xml_answer: <answer> tags, "The answer is X", a lone letter line, the last lone A–D. */
export function extractXmlAnswer(text: string): string {
  if (text.includes('<answer>')) {
    const parts = text.split('<answer>');
    return parts[parts.length - 1].split('</answer>')[0].trim();
  }
  let search = text;
  if (text.includes('</think>')) {
    const parts = text.split('</think>');
    search = parts[parts.length - 1];
  }
  const m = /[Tt]he answer is\s*([A-D])/u.exec(search);
  if (m) return m[1];
  for (const raw of search.trim().split('\n')) {
    const line = raw.trim();
    if (line === 'A' || line === 'B' || line === 'C' || line === 'D') return line;
  }
  // Python's \b is Unicode-aware: a letter A–D with no word character on either side.
  const lone = [...search.matchAll(/(?<![\p{L}\p{N}_])([A-D])(?![\p{L}\p{N}_])/gu)];
  if (lone.length) return lone[lone.length - 1][1];
  return text.trim();
}

export const scienceCorrect = (response: string, answer: string): boolean => extractXmlAnswer(response) === answer;

/** extract_actions: every `Action: <word>`. */
export function extractActions(text: string): string[] {
  return [...text.matchAll(/Action:\s*([\p{L}\p{N}_]+)/gu)].map((m) => m[1]);
}

/** extract_action_inputs: every `Action Input: {...}` block that parses, merged in order. */
export function extractActionInputs(text: string): Record<string, unknown> {
  const combined: Record<string, unknown> = {};
  for (const m of text.matchAll(/Action Input:\s*(\{[\s\S]*?\})/g)) {
    try {
      Object.assign(combined, JSON.parse(m[1]));
    } catch {
      // As the reference: a block that is not JSON is skipped.
    }
  }
  return combined;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const counts = (xs: string[]) => {
  const m = new Map<string, number>();
  for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
  return m;
};

export interface ToolUseStep {
  Action: string;
  Action_Input: string;
}

/** evaluate_tooluse_correctness for one response against its golden steps. */
export function tooluseCorrect(response: string, golden: ToolUseStep[]): boolean {
  const pred = counts(extractActions(response));
  const gt = counts(golden.map((s) => s.Action));
  const actionsMatch = pred.size === gt.size && [...pred].every(([k, n]) => gt.get(k) === n);
  const gtInputs: Record<string, unknown> = {};
  for (const step of golden) {
    try {
      Object.assign(gtInputs, JSON.parse(step.Action_Input));
    } catch {
      // JSONDecodeError / a missing key, suppressed as the reference does.
    }
  }
  return actionsMatch && deepEqual(extractActionInputs(response), gtInputs);
}

/** The custom evaluator's tool-use target: the golden steps as a JSON list of {Action, Action_Input}. */
export function tooluseCorrectFromTarget(response: string, target: string): boolean {
  const golden = JSON.parse(target) as ToolUseStep[];
  if (!Array.isArray(golden)) throw new Error('a tool-use target must be a JSON list of {"Action", "Action_Input"}');
  return tooluseCorrect(response, golden);
}
