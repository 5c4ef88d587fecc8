// C-Eval (ceval/ceval-exam: one config per subject, split "val"): Chinese exam questions with
// choices A-D, as ceval.py builds them: the 52 subjects read in turn, each example grouped by its
// subject (results only: the reference reports accuracy); `limit` takes the first rows of Python's
// random.Random(42).shuffle when it cuts.
import { DataFormatError } from '../../errors.js';
import { CHOICE_GRADING, choiceItem, choicePrompt, optionalString, THINK_THEN_LETTER_ABCD } from './choice.js';
import { stringField } from './fields.js';
import { exampleId } from './gsm8k.js';
import type { Suite } from './types.js';

export const CEVAL_SUBJECTS = [
  'computer_network', 'operating_system', 'computer_architecture', 'college_programming', 'college_physics',
  'college_chemistry', 'advanced_mathematics', 'probability_and_statistics', 'discrete_mathematics',
  'electrical_engineer', 'metrology_engineer', 'high_school_mathematics', 'high_school_physics',
  'high_school_chemistry', 'high_school_biology', 'middle_school_mathematics', 'middle_school_biology',
  'middle_school_physics', 'middle_school_chemistry', 'veterinary_medicine', 'college_economics',
  'business_administration', 'marxism', 'mao_zedong_thought', 'education_science', 'teacher_qualification',
  'high_school_politics', 'high_school_geography', 'middle_school_politics', 'middle_school_geography',
  'modern_chinese_history', 'ideological_and_moral_cultivation', 'logic', 'law', 'chinese_language_and_literature',
  'art_studies', 'professional_tour_guide', 'legal_professional', 'high_school_chinese', 'high_school_history',
  'middle_school_history', 'civil_servant', 'sports_science', 'plant_protection', 'basic_medicine',
  'clinical_medicine', 'urban_and_rural_planner', 'accountant', 'fire_engineer',
  'environmental_impact_assessment_engineer', 'tax_accountant', 'physician',
] as const;

export const ceval: Suite = {
  name: 'ceval',
  description: 'C-Eval: Chinese exam questions in 52 subjects, multiple choice (A-D); the chosen letter must match',
  dataset: { hubId: 'ceval/ceval-exam', name: null, split: 'val', configs: CEVAL_SUBJECTS },
  sample: 'ceval',
  limitPick: { kind: 'python_shuffle', seed: 42 },
  parseRow(row, at, systemPrompt, config) {
    const question = stringField(row, 'question', at);
    const letter = stringField(row, 'answer', at).trim().toUpperCase();
    // Empty choices are left out, as the reference does (the letters then shift).
    const choices = ['A', 'B', 'C', 'D'].map((k) => optionalString(row, k, at)).filter((c) => c !== '');
    if (choices.length < 2) throw new DataFormatError(`${at}: fewer than two of the choices "A"-"D" are filled in`);
    const prompt = choicePrompt(question, choices, THINK_THEN_LETTER_ABCD);
    return choiceItem(exampleId('ceval', question), prompt, systemPrompt, { letter, letters: 'ABCD' }, config ?? 'unknown');
  },
  ...CHOICE_GRADING,
};
