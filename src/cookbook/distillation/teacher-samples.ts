// The off-policy distillation sampling stage (spec §5.2, as issue 7 frames it: sample the
// teacher, then SFT on its traces): prompts are cut into shards, each shard's teacher replies are
// written as `{"messages": [...prompt, assistant reply]}` lines, and the shards are concatenated in
// order into one conversations file that a supervised run trains on.

import type { Message } from '../renderers/types.js';
import { deriveSeed } from '../rl/seeds.js';

/** One prompt of one dataset; `sample` numbers the replies drawn for it. */
export interface ShardItem {
  dataset: number;
  prompt: number;
}

/**
 * Shards over the prompts of every dataset in order (dataset 0's prompts first). A pure function
 * of the counts, so every worker and every retry agrees on what shard k holds.
 */
export function planShards(promptCounts: readonly number[], promptsPerShard: number): ShardItem[][] {
  if (!Number.isInteger(promptsPerShard) || promptsPerShard <= 0) throw new RangeError('promptsPerShard must be a positive integer');
  const items: ShardItem[] = promptCounts.flatMap((n, dataset) => Array.from({ length: n }, (_, prompt) => ({ dataset, prompt })));
  const shards: ShardItem[][] = [];
  for (let i = 0; i < items.length; i += promptsPerShard) shards.push(items.slice(i, i + promptsPerShard));
  return shards;
}

/** Seeds of teacher samples live apart from rollout seeds: a fixed marker in the seed path. */
const TEACHER_SAMPLE_SEED_MARKER = 2_000_029;

/** The sampling seed of reply `sample` to prompt `prompt` of dataset `dataset`. */
export function teacherSampleSeed(runSeed: number, item: ShardItem, sample: number): number {
  return deriveSeed(runSeed, TEACHER_SAMPLE_SEED_MARKER, item.dataset, item.prompt, sample);
}

/** A conversations-JSONL line (the SFT input format): the prompt followed by the teacher's reply. */
export function teacherConversationLine(prompt: readonly Message[], reply: Message): string {
  return JSON.stringify({ messages: [...prompt, { role: 'assistant', content: reply.content }] });
}

export const shardFileName = (shard: number) => `shard_${String(shard).padStart(5, '0')}.jsonl`;
