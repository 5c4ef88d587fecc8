// Splitting a chain of thought into steps as the reference's True-Thinking Score recipe does
// (recipes/true_thinking_score/tts.py): a step starts at a line that opens with a step marker or a
// discourse cue, pieces are stripped, and a piece shorter than 20 characters joins the step before.
// Python's regex classes are spelled out: `\d` is any Unicode decimal digit, `\w` a Unicode letter,
// digit or "_", `\s` and strip() Python's whitespace (renderers/py-whitespace.ts).
import { PY_WS_CLASS, pyStripWs } from '../renderers/py-whitespace.js';

const WORD = String.raw`[\p{L}\p{N}_]`;
const SPACE = `[${PY_WS_CLASS}]`;

/** What a line must start with to begin a new step (the reference's STEP_SPLIT_PATTERN lookahead). */
const STEP_START = new RegExp(
  [
    // Numbered lists and markdown headers
    String.raw`\p{Nd}+[.)]${SPACE}`,
    String.raw`\*\*${WORD}`,
    `#{1,3}${SPACE}`,
    // Explicit step markers
    String.raw`Step \p{Nd}`,
    'First', 'Second', 'Third', 'Fourth', 'Fifth', 'Next', 'Then', 'Now', 'Finally',
    // Discourse transitions
    'So ', 'Therefore', 'Thus', 'Hence', 'Let me', "Let's", 'Wait', 'Hmm', 'Actually',
    // Subject-verb patterns
    'We (?:can|have|know|need|get|see|find|note|observe)',
    'I (?:can|need|should|will|notice|think|see)',
    'This (?:means|gives|implies|shows|is)',
    // Causal/conditional cues
    'Since ', 'Because ', 'Given ', 'If ', 'But ', 'However ', 'Note ',
    // Calculation cues
    'For ', 'Using ', 'Substitut', 'Comput', 'Calculat', 'Evaluat', 'Apply', 'Recall ',
  ].join('|'),
  'uy',
);

/** A self-verification ("aha moment") step; `.` is Python's (anything but "\n"). */
const SELF_VERIFICATION = new RegExp(
  [
    'Wait', 'Hmm', 'Actually',
    "Let me (?:re-?check|re-?evaluate|verify|double[^\\n]?check|reconsider)",
    'Hold on', "No,? that's", "That (?:doesn't|can't) be right",
    'Let me (?:think|reconsider) (?:about|again)',
    "I (?:made|think there's) (?:a|an) (?:mistake|error)",
  ].join('|'),
  'iu',
);

export const MIN_STEP_CHARS = 20;

/**
 * The pieces re.split(STEP_SPLIT_PATTERN) leaves: the text is cut at every line start (the start,
 * or just after a "\n", as Python's MULTILINE `^`) where a step marker follows. The reference's
 * match also swallows the "\n" before the cut; stripping each piece removes it just the same.
 */
function splitAtStepStarts(text: string): string[] {
  const cuts: number[] = [];
  for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', nl + 1)) {
    STEP_START.lastIndex = nl + 1;
    if (STEP_START.test(text)) cuts.push(nl + 1);
  }
  const pieces: string[] = [];
  let from = 0;
  for (const cut of cuts) {
    pieces.push(text.slice(from, cut));
    from = cut;
  }
  pieces.push(text.slice(from));
  return pieces;
}

/** segment_cot_steps: the non-empty stripped pieces, each shorter than `minStepChars` joined to the one before. */
export function segmentCotSteps(cotText: string, minStepChars = MIN_STEP_CHARS): string[] {
  const parts = splitAtStepStarts(cotText).map(pyStripWs).filter((p) => p !== '');
  const merged: string[] = [];
  for (const part of parts) {
    // Python's len() counts code points.
    if (merged.length > 0 && [...part].length < minStepChars) merged[merged.length - 1] += `\n${part}`;
    else merged.push(part);
  }
  return merged;
}

export function isSelfVerificationStep(stepText: string): boolean {
  return SELF_VERIFICATION.test(stepText);
}
