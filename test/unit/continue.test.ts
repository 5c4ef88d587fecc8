// `cookbook continue`'s refusals, on run directories written by hand (no stack): each names the
// file or config key at fault and starts nothing.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveContinuation } from '../../src/cli/continue.js';
import { metadataConflicts } from '../../src/cookbook/checkpoint-metadata.js';
import { RunStore } from '../../src/cookbook/run-store.js';

const slConfig = { model_name: 'tiny-qwen3', lora_rank: 8, dataset: { builtin: 'example_chat', batch_size: 4 }, num_epochs: 1 };

function parent(kind: 'sl' | 'sweep', rows: Array<Record<string, unknown>>) {
  const logPath = mkdtempSync(join(tmpdir(), 'cookbook-continue-'));
  const store = new RunStore(logPath);
  store.init({ workflowId: `${kind}-parent`, kind, config: slConfig }, new Set());
  for (const row of rows) store.writeCheckpoint(row as { name: string });
  return logPath;
}
const message = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return `${(err as Error).name}: ${(err as Error).message}`;
  }
  throw new Error('not refused');
};

describe('cookbook continue refuses', () => {
  it('kinds it cannot continue yet', () => {
    expect(message(() => resolveContinuation(parent('sweep', []), []))).toMatch(/^ConfigError: continue: sweep runs cannot be continued yet \(supported: sl, rl, dpo, distill, distill_off_policy, sdft\)/);
  });
  it('a run without a state checkpoint, and rows written before next_step existed', () => {
    const none = parent('sl', [{ name: 'eval', sampler_path: 'tinker://r/sampler_weights/eval' }]);
    expect(message(() => resolveContinuation(none, []))).toContain(`${join(none, 'checkpoints.jsonl')} has no checkpoint with a state_path`);
    const old = parent('sl', [{ name: 'final', epoch: 1, batch: 0, state_path: 'tinker://r/weights/final' }]);
    expect(message(() => resolveContinuation(old, []))).toMatch(/checkpoint "final" in .*checkpoints\.jsonl has no next_step .* load_checkpoint_path=tinker:\/\/r\/weights\/final load_checkpoint_with_optimizer=true/);
  });
  it('its own keys as overrides, a bad override, and the parent\'s directory as log_path', () => {
    const dir = parent('sl', [{ name: 'final', next_step: 5, state_path: 'tinker://r/weights/final', lora_rank: 8 }]);
    expect(message(() => resolveContinuation(dir, ['continue_from.next_step=2']))).toMatch(/^ConfigError: continue_from: set by `cookbook continue`/);
    expect(message(() => resolveContinuation(dir, ['num_epochs=0']))).toMatch(/num_epochs: Too small/);
    expect(message(() => resolveContinuation(dir, [`log_path=${dir}`]))).toMatch(/^ConfigError: log_path: .* is the parent run's directory/);
    const ok = resolveContinuation(dir, ['num_epochs=2', `log_path=${join(dir, 'child')}`], { workflowId: 'sl-child' });
    expect(ok.config).toMatchObject({ num_epochs: 2, load_checkpoint_path: 'tinker://r/weights/final', load_checkpoint_with_optimizer: true, continue_from: { workflow_id: 'sl-parent', next_step: 5, elapsed_tokens: 0 } });
  });
});

describe('cookbook continue carries', () => {
  it('the token totals of the checkpoint\'s loop state (RL), as the reference\'s resume reads them back', () => {
    const cumulative_tokens = { sampled: 96, prefill_cached: 0, prefill_uncached: 210, trained: 306 };
    const discarded_tokens = { sampled: 8, prefill_cached: 0, prefill_uncached: 17, trained: 0 };
    const dir = parent('sl', [{ name: 'final', batch: 3, next_step: 3, state_path: 'tinker://r/weights/final', cumulative_tokens, discarded_tokens }]);
    const ok = resolveContinuation(dir, [`log_path=${join(dir, 'child')}`], { workflowId: 'sl-child' });
    expect(ok.config.continue_from).toMatchObject({ next_step: 3, cumulative_tokens, discarded_tokens });
    const older = parent('sl', [{ name: 'final', next_step: 3, state_path: 'tinker://r/weights/final' }]);
    expect(resolveContinuation(older, [`log_path=${join(older, 'child')}`], { workflowId: 'sl-child' }).config.continue_from).not.toHaveProperty('cumulative_tokens');
  });
});

describe('checkpoint metadata conflicts', () => {
  it('name the config key for each differing field; unrecorded fields are not compared', () => {
    const cfg = { model_name: 'tiny-qwen3', lora_rank: 8, renderer_name: null, tokenizer_path: '/tok' };
    expect(metadataConflicts({ renderer_name: 'qwen3', base_model: 'tiny-qwen3', tokenizer: '/tok', lora_rank: 8 }, cfg, 'x')).toEqual([]);
    expect(metadataConflicts({}, cfg, 'x')).toEqual([]);
    const out = metadataConflicts({ renderer_name: 'llama3', base_model: 'tiny-llama', tokenizer: 'tiny-llama', lora_rank: 16 }, cfg, 'checkpoint c');
    expect(out.map((m) => m.split(':')[0])).toEqual(['renderer_name', 'model_name', 'tokenizer_path', 'lora_rank']);
    expect(out[3]).toBe('lora_rank: checkpoint c was trained with lora_rank 16 but this run\'s config gives 8; set lora_rank to match, or check_checkpoint_metadata=false to load it anyway');
  });
});
