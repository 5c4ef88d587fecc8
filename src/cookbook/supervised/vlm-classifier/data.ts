// The pure parts of the VLM classifier recipe (reference recipes/vlm_classifier/data.py, eval.py):
// the epoch order (Python `random.Random(seed).shuffle` per repeat), few-shot sampling per class,
// class-name cleaning, the prompt and label messages, and reading the class out of a reply.

import { PythonRandom, randbelow } from '../../python-random.js';
import type { DecodedImage } from '../../images/types.js';
import type { Message } from '../../renderers/types.js';

/** The question every example asks (reference data.py / eval.py). */
export const CLASSIFIER_PROMPT = 'What is the name of the subject in this photo?';
/** The assistant's answer up to the class name; the evaluator prefills it. */
export const ANSWER_PREFIX = 'The subject in this photo is:';

/** `random.shuffle(x)` with a given generator (CPython: Fisher-Yates from the end, `_randbelow`). */
function pyShuffleInPlace<T>(rng: PythonRandom, x: T[]): void {
  for (let i = x.length - 1; i >= 1; i--) {
    const j = randbelow(rng, i + 1);
    [x[i], x[j]] = [x[j], x[i]];
  }
}

/**
 * The reference's `get_shuffled_indices(seed)`: `ceil(num_repeats)` passes over `range(n)`, each
 * shuffled by one `random.Random(seed)`, concatenated and cut at `ceil(num_repeats * n)`.
 */
export function shuffledIndices(n: number, numRepeats: number, seed: number): number[] {
  const maxRepeat = Math.ceil(numRepeats);
  const maxExamples = Math.ceil(numRepeats * n);
  const rng = new PythonRandom(seed);
  const out: number[] = [];
  for (let r = 0; r < maxRepeat; r++) {
    const pass = Array.from({ length: n }, (_, i) => i);
    pyShuffleInPlace(rng, pass);
    out.push(...pass);
  }
  return out.slice(0, maxExamples);
}

/** A label: a ClassLabel's integer, or a string naming the class itself. */
export type Label = number | string;

const compareLabels = (a: Label, b: Label) => (typeof a === 'number' && typeof b === 'number' ? a - b : String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0);

/**
 * The reference's `_sample_per_class`: row indices grouped by label (in row order), classes taken
 * in sorted label order, each class's indices shuffled by one `random.Random(subset_seed)` and cut
 * to `examplesPerClass`. Returns the selected row indices in that order (`dataset.select`).
 */
export function samplePerClass(labels: readonly Label[], examplesPerClass: number, subsetSeed: number): number[] {
  const byClass = new Map<Label, number[]>();
  labels.forEach((label, i) => {
    const list = byClass.get(label);
    if (list) list.push(i);
    else byClass.set(label, [i]);
  });
  const rng = new PythonRandom(subsetSeed);
  const selected: number[] = [];
  for (const label of [...byClass.keys()].sort(compareLabels)) {
    const indices = byClass.get(label)!;
    pyShuffleInPlace(rng, indices);
    selected.push(...indices.slice(0, examplesPerClass));
  }
  return selected;
}

/** The reference's `get_class_name`: `_`, `.` and `-` become spaces, lower case. */
export function cleanClassName(label: string): string {
  return label.replaceAll('_', ' ').replaceAll('.', ' ').replaceAll('-', ' ').toLowerCase();
}

/** The reply the model is trained to give for a class. */
export const answerFor = (className: string) => `${ANSWER_PREFIX} ${className}\n`;

/** The training conversation of one example: the image and the question, then the answer. */
export function classifierMessages(image: DecodedImage, className: string): Message[] {
  return [
    { role: 'user', content: [{ type: 'image', image }, { type: 'text', text: CLASSIFIER_PROMPT }] },
    { role: 'assistant', content: [{ type: 'text', text: answerFor(className) }] },
  ];
}

/** The evaluator's prompt: the user turn alone (the answer prefix is prefilled by the renderer). */
export function classifierPrompt(image: DecodedImage): Message[] {
  return [{ role: 'user', content: [{ type: 'image', image }, { type: 'text', text: CLASSIFIER_PROMPT }] }];
}

/** The reference's parse of a reply: the text after its last `:`, stripped, lower case. */
export function predictedClassName(replyText: string): string {
  const parts = replyText.split(':');
  return parts[parts.length - 1].trim().toLowerCase();
}
