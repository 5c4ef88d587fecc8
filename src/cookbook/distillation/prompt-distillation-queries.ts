// The queries of the prompt distillation data stage: the config's file, or the shipped
// data/multilingual.txt (short everyday sentences in 20 languages, written for this project, in the
// layout of the reference's example_data/multilingual.txt), read one query a line.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROMPT_DISTILLATION_QUERIES_PATH, type PromptDistillConfig } from '../config/prompt-distill.js';
import { DataFormatError } from '../errors.js';
import { rlRepoRoot } from '../rl/datasets.js';
import { parseQueries } from './prompt-distillation.js';

/** The config's queries file, or the shipped one (relative to the repository, wherever the worker runs). */
export function queriesFile(cfg: PromptDistillConfig): string {
  return cfg.dataset.file_path ?? join(rlRepoRoot(), PROMPT_DISTILLATION_QUERIES_PATH);
}

export function readQueries(cfg: PromptDistillConfig): string[] {
  const file = queriesFile(cfg);
  if (!existsSync(file)) throw new DataFormatError(`${file}: the queries file does not exist (dataset.file_path)`);
  const queries = parseQueries(readFileSync(file, 'utf8'));
  if (queries.length === 0) throw new DataFormatError(`${file}: no queries (one per line expected)`);
  return queries;
}
