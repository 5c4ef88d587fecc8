// The benchmark suites `cookbook eval` and the `benchmark` evaluator entry know by name.
import { aime, aime2025, aime2026 } from './aime.js';
import { arenaHard } from './arena-hard.js';
import { ceval } from './ceval.js';
import { gpqa } from './gpqa.js';
import { bfcl } from './bfcl.js';
import { gsm8k } from './gsm8k.js';
import { hmmtFeb2025, hmmtNov2025 } from './hmmt.js';
import { ifbench } from './ifbench.js';
import { ifeval } from './ifeval.js';
import { longbench } from './longbench.js';
import { livecodebench } from './livecodebench.js';
import { math500 } from './math500.js';
import { mbpp } from './mbpp.js';
import { mmlu } from './mmlu.js';
import { mmluPro } from './mmlu-pro.js';
import { mmluRedux } from './mmlu-redux.js';
import { supergpqa } from './supergpqa.js';
import { TERMINAL_SUITE } from './terminal.js';
import { TAU2_BENCH_SUITE } from './tau2-data.js';
import { TERMINAL_BENCH_SUITE } from './terminal-bench.js';
import { SWE_BENCH_SUITE } from './swe-bench.js';
import type { Suite } from './types.js';

export const SUITES: Record<string, Suite> = { gsm8k, math500, aime, aime_2025: aime2025, aime_2026: aime2026, hmmt_feb_2025: hmmtFeb2025, hmmt_nov_2025: hmmtNov2025, ifeval, mmlu, ifbench, longbench, bfcl, gpqa, mmlu_pro: mmluPro, mmlu_redux: mmluRedux, supergpqa, ceval, mbpp, livecodebench, arena_hard: arenaHard };
export const SUITE_NAMES = Object.keys(SUITES) as [string, ...string[]];

/** Suites `cookbook eval` runs as agent episodes, not single samples (none is a training evaluator). */
export const AGENTIC_SUITES = { [TERMINAL_SUITE.name]: TERMINAL_SUITE, [TAU2_BENCH_SUITE.name]: TAU2_BENCH_SUITE, [TERMINAL_BENCH_SUITE.name]: TERMINAL_BENCH_SUITE, [SWE_BENCH_SUITE.name]: SWE_BENCH_SUITE };
export const EVAL_SUITE_NAMES = [...SUITE_NAMES, ...Object.keys(AGENTIC_SUITES)] as [string, ...string[]];

export type { EvalItem, ExampleResult, Grade, GradeContext, SampleResult, Suite } from './types.js';
export { NO_EFFECTS } from './types.js';
