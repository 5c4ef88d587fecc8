// What a checkpoint was trained with, recorded in its checkpoints.jsonl row so that loading it
// into a run with another renderer, base model, tokenizer or LoRA rank fails up front, naming the
// config key, instead of silently training on mismatched tokens or a resized adapter.
import { chooseRendererName } from './renderers/for-model.js';

export interface CheckpointMetadata {
  renderer_name: string | null;
  base_model: string;
  /** tokenizer_path when the run set one, else the base model's own tokenizer. */
  tokenizer: string;
  lora_rank: number;
}

/** The config fields the metadata comes from (every paradigm's config has them). */
export interface MetadataConfig {
  model_name: string;
  lora_rank: number;
  renderer_name?: string | null;
  tokenizer_path?: string | null;
  dataset?: { renderer_name?: string | null } | null;
}

export const CHECKPOINT_METADATA_KEYS = ['renderer_name', 'base_model', 'tokenizer', 'lora_rank'] as const;

/** The renderer the run's data is rendered with; null where the model has no known renderer (RL envs choose their own). */
function rendererOf(cfg: MetadataConfig): string | null {
  try {
    return chooseRendererName(cfg, cfg.dataset?.renderer_name ?? null);
  } catch {
    return cfg.renderer_name ?? null;
  }
}

export function checkpointMetadata(cfg: MetadataConfig): CheckpointMetadata {
  return { renderer_name: rendererOf(cfg), base_model: cfg.model_name, tokenizer: cfg.tokenizer_path ?? cfg.model_name, lora_rank: cfg.lora_rank };
}

/** The config key a metadata field is checked against. */
const CONFIG_KEY_OF: Record<keyof CheckpointMetadata, string> = {
  renderer_name: 'renderer_name',
  base_model: 'model_name',
  tokenizer: 'tokenizer_path',
  lora_rank: 'lora_rank',
};

/**
 * The differences between what a checkpoint recorded and what a run's config would use, one
 * message each naming the config key to change (fields the checkpoint did not record are not
 * compared: rows written before metadata existed, or a bare tinker:// path).
 */
export function metadataConflicts(recorded: Partial<Record<string, unknown>>, cfg: MetadataConfig, what: string): string[] {
  const mine = checkpointMetadata(cfg);
  const out: string[] = [];
  for (const key of CHECKPOINT_METADATA_KEYS) {
    const theirs = recorded[key];
    if (theirs === undefined || theirs === null || theirs === mine[key]) continue;
    out.push(
      `${CONFIG_KEY_OF[key]}: ${what} was trained with ${key} ${JSON.stringify(theirs)} but this run's config gives ${JSON.stringify(mine[key])}; ` +
        `set ${CONFIG_KEY_OF[key]} to match, or check_checkpoint_metadata=false to load it anyway`,
    );
  }
  return out;
}
