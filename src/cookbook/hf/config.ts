// The `hf` dataset source (docs/hf-datasets.md): a Hugging Face dataset named the way
// `datasets.load_dataset(path, name, split=…, revision=…, streaming=…)` names one — a Hub id or a
// local folder/file in the Hub's layouts — plus how its rows map onto this project's rows.

import { z } from 'zod';

export const HfSourceSchema = z.strictObject({
  /** A Hub dataset id ("HuggingFaceH4/no_robots") or a local folder or file (relative to the config file). */
  path: z.string().min(1),
  /** The dataset's config (subset), e.g. "main" for openai/gsm8k; null: the only or default one. */
  name: z.string().min(1).nullable().default(null),
  split: z.string().min(1).default('train'),
  /** A second split to evaluate on (e.g. "test"); null: hold out `test_size` rows of `split`. */
  test_split: z.string().min(1).nullable().default(null),
  /** Hub revision (branch, tag or commit); local folders ignore it. */
  revision: z.string().min(1).default('main'),
  /** How a row becomes a conversation / comparison / problem; the default depends on the dataset kind. */
  format: z.string().min(1).optional(),
  /** The format's field → the dataset's column holding it, for columns named differently. */
  columns: z.record(z.string(), z.string().min(1)).default({}),
  /** Read rows in order through a seeded shuffle buffer instead of loading the split whole. */
  streaming: z.boolean().default(false),
  /** Rows held by the streaming shuffle buffer (the reference's default, 10 000). */
  shuffle_buffer_size: z.int().positive().default(10_000),
});
export type HfSource = z.output<typeof HfSourceSchema>;
export type HfSourceInput = z.input<typeof HfSourceSchema>;

/** Where the source sits in the user's config, for error messages (`dataset.hf.columns.messages`). */
export const HF_CONFIG_PATH = 'dataset.hf';
