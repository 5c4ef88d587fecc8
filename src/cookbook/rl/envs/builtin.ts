// The multi-turn, multiplayer and model-graded environments that ship with the cookbook, by the
// name a `{"kind": "custom", "name": …}` dataset config gives them (registry.ts preloads these).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CustomRLDatasetBuilder } from '../registry.js';
import { buildCodeRLDatasets } from './code/env.js';
import { buildForecastingDatasets } from './forecasting/env.js';
import { buildGuessNumberDatasets } from './guess-number.js';
import { buildNumericsCheckDatasets } from './numerics-check.js';
import { buildOpenAIClientArithmeticDatasets } from './openai-client-arithmetic.js';
import { buildRubricDatasets } from './rubric.js';
import { buildRubricPrometheusDatasets } from './rubric-prometheus.js';
import { buildSearchToolDatasets } from './search-tool.js';
import { buildShorterDatasets } from './shorter.js';
import { buildTerminalDatasets } from './terminal/env.js';
import { buildTicTacToeDatasets } from './tictactoe.js';
import { buildTwentyQuestionsDatasets, TWENTY_QUESTIONS_WORDS_PATH } from './twenty-questions.js';
import { buildWhichShapeDatasets } from './which-shape.js';

/** Relative data paths: the working directory when the file is there, else the repository root. */
function dataRoot(): string {
  if (existsSync(path.resolve(TWENTY_QUESTIONS_WORDS_PATH))) return process.cwd();
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8 && !existsSync(path.join(dir, TWENTY_QUESTIONS_WORDS_PATH)); i++) dir = path.dirname(dir);
  return dir;
}

export const BUILTIN_RL_DATASETS: Record<string, CustomRLDatasetBuilder> = {
  guess_number: ({ args, renderer }) => buildGuessNumberDatasets(args, renderer),
  twenty_questions: ({ args, renderer }) => buildTwentyQuestionsDatasets(args, renderer, dataRoot()),
  tictactoe: ({ args, renderer }) => buildTicTacToeDatasets(args, renderer),
  rubric: ({ args, renderer }) => buildRubricDatasets(args, renderer, dataRoot()),
  rubric_prometheus: ({ args, renderer }) => buildRubricPrometheusDatasets(args, renderer, dataRoot()),
  shorter: ({ args, renderer }) => buildShorterDatasets(args, renderer),
  openai_client_arithmetic: ({ args, renderer }) => buildOpenAIClientArithmeticDatasets(args, renderer),
  code_rl: ({ args, renderer }) => buildCodeRLDatasets(args, renderer, dataRoot()),
  search_tool: ({ args, renderer }) => buildSearchToolDatasets(args, renderer, dataRoot()),
  rl_numerics_check: ({ args, renderer }) => buildNumericsCheckDatasets(args, renderer, dataRoot()),
  which_shape: ({ args, renderer }) => buildWhichShapeDatasets(args, renderer),
  terminal: ({ args, renderer }) => buildTerminalDatasets(args, renderer, dataRoot()),
  forecasting: ({ args, renderer }) => buildForecastingDatasets(args, renderer, dataRoot()),
};
