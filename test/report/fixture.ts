// Log dirs as runs leave them, written through the run store's own writers: an SL-like and an
// RL-like run (metrics with and without prefixes, checkpoints, config naming tiny-qwen3, and an
// RL iteration's rollout record with its trajectory blob).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { computeAdvantages } from '../../src/cookbook/rl/advantages.js';
import { rolloutRecord } from '../../src/cookbook/rl/rollout-record.js';
import { serializeTrajectoryGroup } from '../../src/cookbook/rl/serialize.js';
import { TrajectoryGroup, type Trajectory } from '../../src/cookbook/rl/types.js';
import { RunStore, type RunKind } from '../../src/cookbook/run-store.js';
import { getTokenizer } from '../../src/cookbook/tokenizer.js';
import { rendererForModel } from '../../src/cookbook/renderers/for-model.js';
import { whichShapePictures, WhichShapeEnv } from '../../src/cookbook/rl/envs/which-shape.js';

export const PROMPT_TEXT = 'What is 17 + 25?';
export const ANSWERS = ['The answer is 42.', 'I think it is 41.'];

/** Keys of both kinds of run: plain (train) and test/, env/, optim/, time/ prefixed. */
export const SL_KEYS = ['epoch', 'progress', 'learning_rate', 'train_mean_nll', 'test/nll', 'time/total'];
export const RL_KEYS = ['progress', 'learning_rate', 'env/all/reward/total', 'env/all/ac_tokens_per_turn', 'optim/kl_sample_train_v1', 'time/total'];

export function tempDir(prefix = 'cookbook-report-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

function initRun(logDir: string, workflowId: string, kind: RunKind, config: Record<string, unknown>): RunStore {
  const store = new RunStore(logDir);
  store.init({ workflowId, kind, config: { ...config, log_path: logDir } }, new Set(['learning_rate']));
  return store;
}

export function slRun(logDir: string, workflowId = 'sl-fixture', steps = 6, scale = 1): string {
  const store = initRun(logDir, workflowId, 'sl', { model_name: 'tiny-qwen3', learning_rate: 0.01, lora_rank: 8 });
  for (let step = 0; step < steps; step++) {
    store.writeMetrics({
      step,
      epoch: 0,
      progress: (step + 1) / steps,
      learning_rate: 0.01 * (1 - step / steps),
      train_mean_nll: scale * (3 - step * 0.3),
      ...(step % 2 === 0 ? { 'test/nll': scale * (3.2 - step * 0.25) } : {}),
      'time/total': 0.5 + step * 0.01,
    });
  }
  store.writeCheckpoint({ name: '000003', batch: 3, epoch: 0, state_path: `tinker://${workflowId}/weights/000003` });
  store.writeCheckpoint({ name: 'final', batch: steps, epoch: 1, final: true, state_path: `tinker://${workflowId}/weights/final`, sampler_path: `tinker://${workflowId}/sampler_weights/final` });
  return logDir;
}

/** An RL run of `steps` steps; each step's one group of two trajectories gets a record (reward 1 vs 0). */
export async function rlRun(logDir: string, workflowId = 'rl-fixture', steps = 3): Promise<string> {
  const store = initRun(logDir, workflowId, 'rl', { model_name: 'tiny-qwen3', learning_rate: 0.001, max_tokens: 16 });
  const tok = await getTokenizer('tiny-qwen3');
  const prompt = tok.applyChatTemplate([{ role: 'user', content: PROMPT_TEXT }], { addGenerationPrompt: true });
  for (let step = 0; step < steps; step++) {
    store.writeMetrics({
      step,
      progress: (step + 1) / steps,
      learning_rate: 0.001,
      'env/all/reward/total': 0.5 + step * 0.1,
      'env/all/ac_tokens_per_turn': 7,
      'optim/kl_sample_train_v1': 0.001 * step,
      'time/total': 1.5,
    });
    const rewards = [1, 0];
    const group = new TrajectoryGroup(
      ANSWERS.map((answer, i) => ({
        transitions: [
          {
            ob: { chunks: [{ type: 'encoded_text' as const, tokens: prompt }] },
            ac: { tokens: [...tok.encode(answer), tok.eosTokenId], maybeLogprobs: null, stopReason: 'stop' as const },
            reward: rewards[i],
            episodeDone: true,
            metrics: { correct: rewards[i] },
            logs: { answer },
          },
        ],
        finalOb: { chunks: [] },
        stopReason: 'stop',
      })),
      [0, 0],
      [{ format: 1 }, { format: 1 }],
    );
    const ref = store.writeBlob(`rollouts/batch_${String(step).padStart(6, '0')}/group_0000.json`, serializeTrajectoryGroup(group));
    store.writeRolloutRecord(rolloutRecord(step, [{ ref, batch: step, group: 0, samplingStep: step, tags: ['arithmetic'], trajectories: group }], [group], computeAdvantages([group])));
  }
  store.writeCheckpoint({ name: 'final', batch: steps, final: true, state_path: `tinker://${workflowId}/weights/final` });
  return logDir;
}

export const TOOL_QUESTION = 'What is the capital of Kenya?';
export const TOOL_CALL = 'search({"query_list": ["capital of Kenya"]})';
export const TOOL_RESULT = 'Query: capital of Kenya\nDocument 1:\n"Nairobi"\nNairobi is the capital city of Kenya.\n';
export const TOOL_ERROR = '{"error": "Tool \'lookup\' not found"}';

/**
 * An agent-tool RL run (one step, one group): trajectory 0 calls `search`, gets its result in the
 * next observation and answers; trajectory 1 calls a tool that does not exist and gets the error
 * message back; both logged as tool-use/agent-tool-env.ts logs them.
 */
export async function toolRun(logDir: string, workflowId = 'rl-tools'): Promise<string> {
  const store = initRun(logDir, workflowId, 'rl', { model_name: 'tiny-qwen3', learning_rate: 0.001, max_tokens: 64 });
  const tok = await getTokenizer('tiny-qwen3');
  const enc = (text: string) => tok.encode(text, { addSpecialTokens: false });
  const imEnd = tok.tokenToId('<|im_end|>');
  store.writeMetrics({ step: 0, progress: 1, learning_rate: 0.001, 'env/all/reward/total': 0.5 });
  const prompt = enc(`<|im_start|>user\n${TOOL_QUESTION}<|im_end|>\n<|im_start|>assistant\n`);
  const episode = (name: string, args: string, result: string, answer: string, reward: number): Trajectory => {
    const call = [...enc(`<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`), imEnd];
    const next = [...prompt, ...call, ...enc(`\n<|im_start|>user\n<tool_response>\n${result}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`)];
    return {
      transitions: [
        {
          ob: { chunks: [{ type: 'encoded_text' as const, tokens: prompt }] },
          ac: { tokens: call, maybeLogprobs: null, stopReason: 'stop' as const },
          reward: 0,
          episodeDone: false,
          metrics: {},
          logs: { tool_call_0: `${name}(${args})`, tool_result_0: result },
        },
        {
          ob: { chunks: [{ type: 'encoded_text' as const, tokens: next }] },
          ac: { tokens: [...enc(`Answer: ${answer}`), imEnd], maybeLogprobs: null, stopReason: 'stop' as const },
          reward,
          episodeDone: true,
          metrics: { correct: reward },
          logs: { assistant_content: `Answer: ${answer}` },
        },
      ],
      finalOb: { chunks: [] },
      stopReason: 'stop',
    };
  };
  const group = new TrajectoryGroup(
    [episode('search', '{"query_list": ["capital of Kenya"]}', TOOL_RESULT, 'Nairobi', 1), episode('lookup', '{"q": "Kenya"}', TOOL_ERROR, 'Mombasa', 0)],
    [0, 0],
    [{}, {}],
  );
  const ref = store.writeBlob('rollouts/batch_000000/group_0000.json', serializeTrajectoryGroup(group));
  store.writeRolloutRecord(rolloutRecord(0, [{ ref, batch: 0, group: 0, samplingStep: 0, tags: ['single_hop'], trajectories: group }], [group], computeAdvantages([group])));
  return logDir;
}

/**
 * A vision RL run (one step, one group of one): the which_shape env's real observation, an image
 * between the vision markers, and the policy's answer.
 */
export async function imageRun(logDir: string, workflowId = 'rl-images'): Promise<string> {
  const store = initRun(logDir, workflowId, 'rl', { model_name: 'tiny-qwen3-vl', learning_rate: 0.001, max_tokens: 8 });
  const { renderer, tokenizer } = await rendererForModel('tiny-qwen3-vl');
  const [picture] = whichShapePictures(0, 1, 64);
  const { ob } = await new WhichShapeEnv(picture, renderer).initialObservation();
  store.writeMetrics({ step: 0, progress: 1, learning_rate: 0.001, 'env/all/reward/total': 1 });
  const group = new TrajectoryGroup(
    [
      {
        transitions: [
          {
            ob,
            ac: { tokens: [...tokenizer.encode(picture.shape, { addSpecialTokens: false }), tokenizer.tokenToId('<|im_end|>')], maybeLogprobs: null, stopReason: 'stop' as const },
            reward: 1,
            episodeDone: true,
            metrics: { correct: 1 },
            logs: {},
          },
        ],
        finalOb: { chunks: [] },
        stopReason: 'stop',
      },
    ],
    [0],
    [{}],
  );
  const ref = store.writeBlob('rollouts/batch_000000/group_0000.json', serializeTrajectoryGroup(group));
  store.writeRolloutRecord(rolloutRecord(0, [{ ref, batch: 0, group: 0, samplingStep: 0, tags: ['which_shape'], trajectories: group }], [group], computeAdvantages([group])));
  return logDir;
}
