// The on-policy distillation signal (spec §5.1, reference `train_on_policy.py`): per-token reverse
// KL between the student's sampled logprobs and the teacher's logprobs of the same tokens, added to
// the advantages as a penalty. Float32 as torch computes it. Teacher scoring is the caller's side
// effect: `teacherLogprobs_D[i]` is `computeLogprobs(fullSequenceForScoring(d))[1:]`.

import type { Datum } from '../../backends/types.js';
import { f32 } from '../float32.js';
import { discountedFutureSum } from '../rl/kl.js';

export const TEACHER_KL_METRIC = 'teacher_kl';
export const teacherKlDatasetMetric = (datasetIndex: number) => `teacher_kl/dataset_${datasetIndex}`;

function tensor(datum: Datum, key: string): number[] {
  const t = datum.loss_fn_inputs[key];
  if (!t) throw new RangeError(`datum has no loss_fn_inputs.${key}`);
  return t.data;
}

/**
 * rkl_t = (lp_student_t − lp_teacher_t)·mask_t; advantages += −coef·mask_t·rkl_t (not centred,
 * unlike the RL reference-model penalty), discounted over every position when γ > 0 (the same
 * quirk as §2.10: prompt positions before an action receive a share). Mutates the advantages.
 *
 * Returns `teacher_kl` = Σrkl/Σmask over the batch (float32 tensor sums, as `sum([t.sum() …])`)
 * and `teacher_kl/dataset_{idx}` per dataset with a positive mask sum (per-datum sums taken with
 * `.item()` and accumulated as Python floats).
 */
export function incorporateTeacherKl(
  data_D: Datum[],
  teacherLogprobs_D: readonly number[][],
  datasetIndex_D: readonly number[],
  coef: number,
  gamma: number,
): Record<string, number> {
  if (data_D.length !== teacherLogprobs_D.length || data_D.length !== datasetIndex_D.length) {
    throw new RangeError(`${data_D.length} datums, ${teacherLogprobs_D.length} teacher logprob lists, ${datasetIndex_D.length} dataset indices`);
  }
  const negCoef = f32(-coef);
  let rklSum = 0;
  let maskSum = 0;
  const perDataset = new Map<number, { rkl: number; mask: number }>();
  data_D.forEach((d, i) => {
    const sampled = tensor(d, 'logprobs');
    const mask = tensor(d, 'mask').map((m) => f32(m));
    const teacher = teacherLogprobs_D[i];
    if (teacher.length !== sampled.length) throw new RangeError(`datum ${i}: teacher logprobs has ${teacher.length} entries, expected ${sampled.length}`);
    if (mask.length !== sampled.length) throw new RangeError(`datum ${i}: mask has ${mask.length} entries, expected ${sampled.length}`);
    const rkl = sampled.map((s, t) => f32(f32(f32(s) - f32(teacher[t])) * mask[t]));
    let klAdv = mask.map((m, t) => f32(f32(negCoef * m) * rkl[t]));
    if (gamma > 0) klAdv = discountedFutureSum(klAdv, gamma);
    const adv = tensor(d, 'advantages');
    const data = adv.map((a, t) => f32(f32(a) + klAdv[t]));
    d.loss_fn_inputs.advantages = { data, dtype: 'float32', shape: [data.length] };

    let rs = 0;
    for (const x of rkl) rs = f32(rs + x);
    let ms = 0;
    for (const m of mask) ms = f32(ms + m);
    rklSum = f32(rklSum + rs);
    maskSum = f32(maskSum + ms);
    const idx = datasetIndex_D[i];
    const acc = perDataset.get(idx) ?? { rkl: 0, mask: 0 };
    perDataset.set(idx, { rkl: acc.rkl + rs, mask: acc.mask + ms });
  });
  const metrics: Record<string, number> = { [TEACHER_KL_METRIC]: f32(rklSum / maskSum) };
  for (const idx of [...perDataset.keys()].sort((a, b) => a - b)) {
    const { rkl, mask } = perDataset.get(idx)!;
    if (mask > 0) metrics[teacherKlDatasetMetric(idx)] = rkl / mask;
  }
  return metrics;
}
