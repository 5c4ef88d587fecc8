// The benchmark suites `cookbook eval` and the `benchmark` evaluator entry know by name.
import { gsm8k } from './gsm8k.js';
import { ifeval } from './ifeval.js';
import { math500 } from './math500.js';
import { mmlu } from './mmlu.js';
import { TERMINAL_SUITE } from './terminal.js';
import type { Suite } from './types.js';

export const SUITES: Record<string, Suite> = { gsm8k, math500, ifeval, mmlu };
export const SUITE_NAMES = Object.keys(SUITES) as [string, ...string[]];

/** Suites `cookbook eval` runs as agent episodes, not single samples (none is a training evaluator). */
export const AGENTIC_SUITES = { [TERMINAL_SUITE.name]: TERMINAL_SUITE };
export const EVAL_SUITE_NAMES = [...SUITE_NAMES, ...Object.keys(AGENTIC_SUITES)] as [string, ...string[]];

export type { EvalItem, ExampleResult, Grade, GradeContext, SampleResult, Suite } from './types.js';
export { NO_EFFECTS } from './types.js';
