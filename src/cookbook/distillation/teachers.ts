// What every distillation loop asks of a teacher: where its weights are, and that it reads the
// student's tokens (a teacher scores or forces the student's token ids, so the tokenizers must agree).
import { tokenizerFamilyForModel } from '../tokenizer.js';

/** The reference's TeacherConfig(base_model, load_checkpoint_path). */
export interface TeacherConfig {
  base_model: string;
  load_checkpoint_path: string | null;
}

/** The sampler a teacher is: its sampler weights when given, else its base model. */
export const teacherSource = (t: TeacherConfig): { modelPath: string } | { baseModel: string } =>
  t.load_checkpoint_path ? { modelPath: t.load_checkpoint_path } : { baseModel: t.base_model };

/** Why `teacher` cannot teach `student`, or undefined when their tokenizers agree (or are unknown). */
export function teacherTokenizerProblem(student: string, teacher: string): string | undefined {
  const [s, t] = [tokenizerFamilyForModel(student), tokenizerFamilyForModel(teacher)];
  return s && t && s !== t ? `${teacher} does not share ${student}'s tokenizer, so it cannot score the student's tokens` : undefined;
}
