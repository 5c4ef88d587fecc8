// Self-distillation fine-tuning (the reference's distillation/sdft.py): the frozen base model as
// teacher sees the question with a golden demonstration, the student only the question. The pure
// parts: the teacher's prompt, where a student completion sits in the teacher-forced sequence, and
// the datums each mode trains on — top-K soft targets for cross_entropy (or the reverse-KL custom
// loss), or per-token advantages teacher_lp − student_lp for an RL loss. Float32 where the
// reference computes on float32 tensors.
import type { Datum, ModelInput, TensorData } from '../../backends/types.js';
import { f32 } from '../float32.js';
import { modelInputLength, modelInputToInts, textChunk } from '../model-input.js';
import type { Message, Renderer } from '../renderers/types.js';
import { renormalizeF32, type TopkPromptLogprobs } from './topk.js';

export const DEFAULT_DEMO_TEMPLATE =
  '{question}\n\n' +
  'This is an example for a response to the question:\n' +
  '{golden_answer}\n\n' +
  'Now answer with a response of your own, including the thinking process.';

/** Python's `str.format` with the two fields the template names (`{{`/`}}` are literal braces). */
export function formatDemoTemplate(template: string, fields: { question: string; golden_answer: string }): string {
  return template.replace(/\{\{|\}\}|\{([^{}]*)\}/g, (m, name: string | undefined) => {
    if (m === '{{') return '{';
    if (m === '}}') return '}';
    if (name === 'question' || name === 'golden_answer') return fields[name];
    throw new RangeError(`demo_template: unknown field {${name}} (it may use {question} and {golden_answer})`);
  });
}

/** build_sdft_teacher_prompt: [system,] user(demo_template(question, golden_answer)), as a generation prompt. */
export function buildSdftTeacherPrompt(
  question: string,
  goldenAnswer: string,
  renderer: Renderer,
  systemPrompt: string | null = null,
  demoTemplate: string = DEFAULT_DEMO_TEMPLATE,
): ModelInput {
  const messages: Message[] = [];
  if (systemPrompt) messages.push({ role: 'system', content: systemPrompt });
  messages.push({ role: 'user', content: formatDemoTemplate(demoTemplate, { question, golden_answer: goldenAnswer }) });
  return renderer.buildGenerationPrompt(messages);
}

const maskIndices = (datum: Datum): number[] => {
  const mask = datum.loss_fn_inputs.mask?.data;
  if (!mask) throw new RangeError('an SDFT datum needs its loss_fn_inputs.mask');
  const out: number[] = [];
  mask.forEach((m, i) => {
    if (m > 0) out.push(i);
  });
  return out;
};

export interface CompletionSlice {
  /** The student's completion (from the first trained target on), cut to what fits after the teacher prompt. */
  completionTokens: number[];
  teacherPromptLen: number;
  completionStart: number;
  truncated: boolean;
}

/** _extract_completion_tokens. */
export function extractCompletionTokens(datum: Datum, teacherPromptLen: number, maxContextLength: number): CompletionSlice {
  const indices = maskIndices(datum);
  if (indices.length === 0) return { completionTokens: [], teacherPromptLen, completionStart: 0, truncated: false };
  const targets = datum.loss_fn_inputs.target_tokens.data;
  const full = [...modelInputToInts(datum.model_input), targets[targets.length - 1]];
  const completionStart = indices[0] + 1;
  let completionTokens = full.slice(completionStart);
  const available = maxContextLength - teacherPromptLen;
  if (available <= 0) return { completionTokens: [], teacherPromptLen, completionStart, truncated: true };
  let truncated = false;
  if (completionTokens.length > available) {
    completionTokens = completionTokens.slice(0, available);
    truncated = true;
  }
  return { completionTokens, teacherPromptLen, completionStart, truncated };
}

/** _completion_positions: each trained position of the student and its offset in the teacher's completion. */
export function completionPositions(datum: Datum, completionLen: number): Array<[number, number]> {
  const indices = maskIndices(datum);
  if (indices.length === 0) return [];
  const first = indices[0];
  return indices.filter((i) => i - first < completionLen).map((i) => [i, i - first]);
}

/** What the teacher is forced through for one datum: its prompt plus the student's (cut) completion. */
export interface TeacherForcing {
  sequence: ModelInput;
  teacherPromptLen: number;
  completionLen: number;
  truncated: boolean;
}

/** The teacher-forced sequence of every datum (its group's teacher prompt + its completion). */
export function teacherForcings(data_D: Datum[], groupIdx_D: number[], teacherPrompts_P: ModelInput[], maxContextLength: number): TeacherForcing[] {
  return data_D.map((datum, i) => {
    const prompt = teacherPrompts_P[groupIdx_D[i]];
    const slice = extractCompletionTokens(datum, modelInputLength(prompt), maxContextLength);
    const sequence = slice.completionTokens.length ? { chunks: [...prompt.chunks, textChunk(slice.completionTokens)] } : prompt;
    return { sequence, teacherPromptLen: slice.teacherPromptLen, completionLen: slice.completionTokens.length, truncated: slice.truncated };
  });
}

export interface TopkDatumsOptions {
  topk: number;
  vocabSize: number | null;
  skipFirstNTokens: number;
  /** build_reverse_kl_datums' metrics (positions) instead of build_topk_distillation_datums' (completion tokens). */
  reverse: boolean;
}

/**
 * build_topk_distillation_datums / build_reverse_kl_datums from the teacher's top-K of each
 * teacher-forced sequence: (N, K) target tokens and renormalised teacher probabilities (0 where
 * nothing is trained), and the `sdft/*` metrics.
 */
export function buildTopkDistillationDatums(
  data_D: Datum[],
  forcings_D: TeacherForcing[],
  topk_D: Array<TopkPromptLogprobs | null>,
  opts: TopkDatumsOptions,
): { datums: Datum[]; metrics: Record<string, number> } {
  const K = opts.topk;
  let totalCompletion = 0;
  let totalPositions = 0;
  let totalEntropy = 0;
  const datums = data_D.map((datum, i) => {
    const N = modelInputLength(datum.model_input);
    const { completionLen, teacherPromptLen } = forcings_D[i];
    const positions = completionPositions(datum, completionLen);
    const tokens = new Array<number>(N * K).fill(0);
    const weights = new Array<number>(N * K).fill(0);
    const topkAll = topk_D[i];
    positions.forEach(([studentPos, offset], t) => {
      if (t < opts.skipFirstNTokens) return;
      const teacherPos = teacherPromptLen + offset;
      if (!topkAll || teacherPos >= topkAll.length) return;
      const entries = topkAll[teacherPos];
      if (!entries) return;
      const kept = entries.slice(0, K).filter(([tok]) => opts.vocabSize === null || tok < opts.vocabSize);
      if (kept.length === 0) return;
      const { logprobs, probs } = renormalizeF32(kept.map(([, lp]) => lp));
      kept.forEach(([tok], k) => {
        tokens[studentPos * K + k] = tok;
        weights[studentPos * K + k] = probs[k];
      });
      // H = -(p * log p).sum() on float32 tensors, accumulated as a Python float.
      let h = 0;
      for (let k = 0; k < probs.length; k++) h = f32(h + f32(probs[k] * logprobs[k]));
      totalEntropy += -h;
      totalPositions += 1;
    });
    if (positions.length) totalCompletion += positions.length;
    return {
      model_input: datum.model_input,
      loss_fn_inputs: {
        target_tokens: { data: tokens, dtype: 'int64', shape: [N, K] } satisfies TensorData,
        weights: { data: weights, dtype: 'float32', shape: [N, K] } satisfies TensorData,
      },
    };
  });
  const metrics: Record<string, number> = {
    'sdft/teacher_truncated_count': forcings_D.filter((f) => f.truncated).length,
    'sdft/num_datums': data_D.length,
    'sdft/topk': K,
  };
  if (opts.reverse) {
    if (totalPositions > 0) {
      metrics['sdft/total_completion_positions'] = totalPositions;
      metrics['sdft/mean_teacher_entropy'] = totalEntropy / totalPositions;
    }
  } else if (totalCompletion > 0) {
    metrics['sdft/total_completion_tokens'] = totalCompletion;
    metrics['sdft/mean_teacher_entropy'] = totalEntropy / totalCompletion;
  }
  return { datums, metrics };
}

/**
 * compute_sdft_advantages from the teacher's logprobs of each teacher-forced sequence: the datums
 * with advantages teacher_lp − student_lp at their trained positions (0 elsewhere), and the metrics.
 */
export function computeSdftAdvantages(
  data_D: Datum[],
  forcings_D: TeacherForcing[],
  teacherLogprobs_D: Array<Array<number | null>>,
): { datums: Datum[]; metrics: Record<string, number> } {
  let advSum = 0;
  let maskSum = 0;
  let teacherSum = 0;
  let studentSum = 0;
  const datums = data_D.map((datum, i) => {
    const { completionLen, teacherPromptLen } = forcings_D[i];
    if (completionLen === 0) return datum;
    const mask = datum.loss_fn_inputs.mask.data;
    const studentLp = datum.loss_fn_inputs.logprobs.data;
    const teacherLp = teacherLogprobs_D[i].slice(teacherPromptLen, teacherPromptLen + completionLen).map((lp) => f32(lp ?? 0));
    const adv = new Array<number>(mask.length).fill(0);
    const positions = completionPositions(datum, completionLen).filter(([, offset]) => offset < teacherLp.length);
    for (const [pos, offset] of positions) adv[pos] = f32(teacherLp[offset] - f32(studentLp[pos]));
    let masked = 0;
    let maskTotal = 0;
    let teacherTotal = 0;
    for (let p = 0; p < mask.length; p++) {
      masked = f32(masked + f32(adv[p] * f32(mask[p])));
      maskTotal = f32(maskTotal + f32(mask[p]));
    }
    for (const [, offset] of positions) teacherTotal = f32(teacherTotal + teacherLp[offset]);
    advSum += masked;
    maskSum += maskTotal;
    teacherSum += teacherTotal;
    for (const [pos] of positions) studentSum += f32(studentLp[pos]);
    return { ...datum, loss_fn_inputs: { ...datum.loss_fn_inputs, advantages: { data: adv, dtype: 'float32', shape: [adv.length] } satisfies TensorData } };
  });
  const metrics: Record<string, number> = {};
  if (maskSum > 0) {
    metrics['sdft/mean_advantage'] = advSum / maskSum;
    metrics['sdft/mean_teacher_lp'] = teacherSum / maskSum;
    metrics['sdft/mean_student_lp'] = studentSum / maskSum;
  }
  metrics['sdft/teacher_truncated_count'] = forcings_D.filter((f) => f.truncated).length;
  metrics['sdft/num_datums'] = data_D.length;
  return { datums, metrics };
}
