// The rollout browser's data: what each RL / distillation iteration sampled, decoded to text with
// the run's tokenizer. The source is the per-iteration rollout records (run-store.ts
// RolloutRecord: groups by blob plus their advantages); runs from before those records existed
// fall back to the rollout blobs themselves, with advantages recomputed the way training does.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelInput } from '../backends/types.js';
import { computeAdvantages } from '../cookbook/rl/advantages.js';
import { deserializeTrajectoryGroup } from '../cookbook/rl/serialize.js';
import type { Logs, Metrics, RolloutError, TrajectoryGroup } from '../cookbook/rl/types.js';
import { RunStore, type RolloutRecord } from '../cookbook/run-store.js';
import { getTokenizer, type Tokenizer } from '../cookbook/tokenizer.js';
import type { RunData } from './load.js';

export interface TransitionView {
  /** The observation as text; for a later turn only what was added after the previous action. */
  ob: string;
  obTokens: number;
  obIsContinuation: boolean;
  ac: string;
  acTokens: number;
  reward: number;
  episodeDone: boolean;
  stopReason: string;
  metrics: Metrics;
  logs: Logs;
  /** The turn's tool calls and their results, from the agent envs' `tool_call_<i>` / `tool_result_<i>` logs. */
  toolCalls: ToolCallView[];
  /** The observation's images, in order (`[image N]` in `ob` marks where each sits). */
  images: ImageView[];
}

export interface ImageView {
  /** A `data:` URL of the chunk's bytes; null when the report's image budget was spent. */
  src: string | null;
  tokens: number;
}

/** Bytes of images a report embeds (base64 adds a third); past it images show as placeholders. */
export const REPORT_IMAGE_BUDGET_BYTES = 8 << 20;

export interface ToolCallView {
  index: number;
  /** `name(arguments JSON)`, as the env logged the call. */
  call: string;
  /** The tool message's text; null when the env logged no result for the call. */
  result: string | null;
  /** The result is the tool library's error message (`{"error": …}`: unknown tool, bad arguments, a throw, a timeout). */
  error: boolean;
}

const TOOL_LOG = /^tool_(call|result)_(\d+)$/;

/** The tool calls an agent env logged for a turn (tool-use/agent-tool-env.ts), in call order. */
export function toolCallsOf(logs: Logs): ToolCallView[] {
  const byIndex = new Map<number, ToolCallView>();
  for (const [key, value] of Object.entries(logs)) {
    const m = TOOL_LOG.exec(key);
    if (!m || m[1] !== 'call') continue;
    const index = Number(m[2]);
    const result = logs[`tool_result_${index}`];
    const text = result === undefined ? null : String(result);
    byIndex.set(index, { index, call: String(value), result: text, error: text !== null && isErrorResult(text) });
  }
  return [...byIndex.values()].sort((a, b) => a.index - b.index);
}

/** The logs other than the tool calls and results that `toolCallsOf` lifts out. */
export function otherLogs(logs: Logs): Logs {
  return Object.fromEntries(Object.entries(logs).filter(([k]) => !TOOL_LOG.test(k)));
}

function isErrorResult(text: string): boolean {
  if (!text.startsWith('{"error"')) return false;
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null && 'error' in parsed && Object.keys(parsed).length === 1;
  } catch {
    return false;
  }
}

export interface TrajectoryView {
  index: number;
  totalReward: number;
  finalReward: number;
  /** Null when the group did not reach the loss (dropped for a constant reward). */
  advantage: number | null;
  metrics: Metrics;
  transitions: TransitionView[];
}

export interface GroupView {
  batch: number;
  group: number;
  samplingStep: number | null;
  tags: string[];
  trained: boolean;
  meanReward: number;
  trajectories: TrajectoryView[];
  errors: RolloutError[];
}

export interface IterationView {
  step: number;
  meanReward: number;
  groups: GroupView[];
}

export interface RolloutBrowser {
  iterations: IterationView[];
  /** Iterations on disk; more than `iterations.length` when the report shows a sample of them. */
  totalIterations: number;
  /** Why text shows as token ids, when the tokenizer could not be loaded. */
  tokenizerNote?: string;
  /** Where the data came from: the records, or the raw rollout blobs of an older run. */
  source: 'records' | 'blobs';
}

export const DEFAULT_MAX_ITERATIONS = 50;

interface Decoder {
  decode(input: ModelInput | number[]): string;
}

/** Images a report embeds, until their budget is spent. */
export class ImageBudget {
  constructor(private left = REPORT_IMAGE_BUDGET_BYTES) {}

  views(input: ModelInput): ImageView[] {
    return input.chunks.flatMap((c): ImageView[] => {
      if (c.type !== 'image') return [];
      const bytes = Math.floor((c.data.length * 3) / 4);
      const fits = bytes <= this.left;
      if (fits) this.left -= bytes;
      return [{ src: fits ? `data:image/${c.format};base64,${c.data}` : null, tokens: c.expected_tokens ?? 0 }];
    });
  }
}

async function decoderFor(run: RunData): Promise<{ decoder: Decoder; note?: string }> {
  const modelName = run.config?.model_name;
  const tokenizerPath = run.config?.tokenizer_path;
  let tokenizer: Tokenizer | null = null;
  let note: string | undefined;
  if (typeof modelName !== 'string') note = 'config.json names no model_name: showing token ids';
  else {
    try {
      tokenizer = await getTokenizer(modelName, typeof tokenizerPath === 'string' ? tokenizerPath : null);
    } catch (err) {
      note = `no tokenizer for ${modelName} (${(err as Error).message}): showing token ids`;
    }
  }
  // Special tokens are kept: the chat template's markers show where turns begin and end.
  const text = (tokens: number[]) => (tokenizer ? tokenizer.decode(tokens, { skipSpecialTokens: false }) : `[${tokens.join(', ')}]`);
  return {
    note,
    decoder: {
      decode: (input) => {
        if (Array.isArray(input)) return text(input);
        let images = 0;
        return input.chunks.map((c) => (c.type === 'encoded_text' ? text(c.tokens) : `[image ${++images}]`)).join('');
      },
    },
  };
}

const textTokens = (input: ModelInput) => input.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : []));
const inputLength = (input: ModelInput) => input.chunks.reduce((n, c) => n + (c.type === 'encoded_text' ? c.tokens.length : (c.expected_tokens ?? 0)), 0);
const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

function startsWith(xs: readonly number[], prefix: readonly number[]): boolean {
  if (prefix.length > xs.length) return false;
  for (let i = 0; i < prefix.length; i++) if (xs[i] !== prefix[i]) return false;
  return true;
}

function groupView(g: TrajectoryGroup, meta: Omit<GroupView, 'meanReward' | 'trajectories' | 'errors'>, advantages: number[] | null, decoder: Decoder, budget: ImageBudget): GroupView {
  const totals = g.getTotalRewards();
  return {
    ...meta,
    meanReward: mean(totals),
    errors: g.rolloutErrors,
    trajectories: g.trajectoriesG.map((traj, i) => {
      let previous: number[] | null = null;
      const transitions = traj.transitions.map((t): TransitionView => {
        const obTokens = textTokens(t.ob);
        // A multi-turn env's next observation repeats the conversation so far: show what is new.
        const skip = previous !== null && obTokens.length === inputLength(t.ob) && startsWith(obTokens, previous) ? previous.length : 0;
        previous = [...obTokens, ...t.ac.tokens];
        return {
          ob: skip ? decoder.decode(obTokens.slice(skip)) : decoder.decode(t.ob),
          obTokens: inputLength(t.ob),
          obIsContinuation: skip > 0,
          ac: decoder.decode(t.ac.tokens),
          acTokens: t.ac.tokens.length,
          reward: t.reward,
          episodeDone: t.episodeDone,
          stopReason: t.ac.stopReason,
          metrics: t.metrics,
          logs: t.logs,
          toolCalls: toolCallsOf(t.logs),
          // A continuation shows only new text tokens, so only a whole observation shows images.
          images: skip ? [] : budget.views(t.ob),
        };
      });
      return { index: i, totalReward: totals[i], finalReward: g.finalRewardsG[i], advantage: advantages?.[i] ?? null, metrics: g.metricsG[i] ?? {}, transitions };
    }),
  };
}

/** `n` of `items`, evenly spaced, always with the first and the last: how the run changed. */
export function spread<T>(items: readonly T[], n: number): T[] {
  if (items.length <= n) return [...items];
  if (n <= 1) return items.slice(-1);
  const picked = new Set<number>();
  for (let i = 0; i < n; i++) picked.add(Math.round((i * (items.length - 1)) / (n - 1)));
  return [...picked].sort((a, b) => a - b).map((i) => items[i]);
}

/** Records of older runs: one per rollout directory (`batch_N` in RL, `iteration_N` in distillation). */
function recordsFromBlobs(logDir: string): RolloutRecord[] {
  const root = join(logDir, '.cookbook', 'store', 'rollouts');
  if (!existsSync(root)) return [];
  const records: RolloutRecord[] = [];
  for (const dir of readdirSync(root).sort()) {
    const m = /^(?:batch|iteration)_(\d+)$/.exec(dir);
    if (!m) continue;
    const step = Number(m[1]);
    // Async RL resamples a stale group under `_attempt_N`: the latest attempt is the one trained.
    const latest = new Map<number, { file: string; attempt: number }>();
    for (const file of readdirSync(join(root, dir))) {
      const f = /^group_(\d+)(?:_attempt_(\d+))?\.json$/.exec(file);
      if (!f) continue;
      const attempt = Number(f[2] ?? 0);
      if ((latest.get(Number(f[1]))?.attempt ?? -1) < attempt) latest.set(Number(f[1]), { file, attempt });
    }
    const groups = [...latest.entries()]
      .sort(([a], [b]) => a - b)
      .map(([group, { file }]) => ({ ref: `rollouts/${dir}/${file}`, batch: step, group, sampling_step: null, tags: [], advantages: null }));
    if (groups.length) records.push({ format: 'rollout_record/v1', step, split: 'train', groups });
  }
  return records;
}

export async function loadRollouts(run: RunData, maxIterations = DEFAULT_MAX_ITERATIONS): Promise<RolloutBrowser | null> {
  const store = new RunStore(run.logDir);
  let records = store.readRolloutRecords();
  const source = records.length ? 'records' : 'blobs';
  if (!records.length) records = recordsFromBlobs(run.logDir);
  if (!records.length) return null;
  const { decoder, note } = await decoderFor(run);
  const budget = new ImageBudget();
  const iterations = spread(records, maxIterations).map((record): IterationView => {
    const groups = record.groups.map((g) => {
      const trajectories = deserializeTrajectoryGroup(store.readBlob(g.ref).toString('utf8'));
      // Without a record, recompute: centring within the group is all training does (advantages.ts).
      const advantages = source === 'records' ? g.advantages : computeAdvantages([trajectories])[0];
      const meta = { batch: g.batch, group: g.group, samplingStep: g.sampling_step, tags: g.tags, trained: source === 'blobs' || g.advantages !== null };
      return groupView(trajectories, meta, advantages, decoder, budget);
    });
    return { step: record.step, groups, meanReward: mean(groups.flatMap((g) => g.trajectories.map((t) => t.totalReward))) };
  });
  return { iterations, totalIterations: records.length, tokenizerNote: note, source };
}
