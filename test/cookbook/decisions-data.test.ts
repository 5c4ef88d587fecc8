// Decisions files and the loss they call for: a bad row is refused naming the file, the line and
// the field; the loss follows the rows unless the config names one, and cross_entropy refuses soft
// targets naming the line. The shipped files parse, one kind of target each.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DecisionsConfigSchema } from '../../src/cookbook/config/decisions.js';
import { parseWithOverrides } from '../../src/cookbook/config/overrides.js';
import { parseDecisions, readDecisions, resolveLoss, scoreDecisions, targetVector } from '../../src/cookbook/supervised/decisions/index.js';

const choices = [{ label: 'yes', description: 'It is' }, { label: 'no' }];
const row = (extra: Record<string, unknown>) => JSON.stringify({ question: 'Is it?', choices, ...extra });
const refusal = (text: string) => {
  try {
    parseDecisions(text, 'd.jsonl');
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('accepted');
};

describe('decisions files', () => {
  it('reads labels and target probabilities, descriptions optional', () => {
    const rows = parseDecisions(`${row({ label: 'no' })}\n\n${row({ target_probs: { yes: 0.25 } })}\n`, 'd.jsonl');
    expect(rows.map((r) => r.line)).toEqual([1, 3]);
    expect(rows[0].decision.choices).toEqual([['yes', 'It is'], ['no', '']]);
    expect(targetVector(rows[0])).toEqual([0, 1]);
    expect(targetVector(rows[1])).toEqual([0.25, 0]); // an omitted label is 0
  });

  it('refuses a bad row naming the file, the line and the field', () => {
    expect(refusal(`${row({ label: 'no' })}\n${JSON.stringify({ choices, label: 'no' })}`)).toMatch(/^d\.jsonl:2: question: /);
    expect(refusal(row({ label: 'maybe' }))).toBe('d.jsonl:1: label: "maybe" is not one of the choices ("yes", "no")');
    expect(refusal(row({ target_probs: { yes: -0.5 } }))).toMatch(/^d\.jsonl:1: target_probs\.yes: /);
    expect(refusal(row({ target_probs: { perhaps: 1 } }))).toBe('d.jsonl:1: target_probs.perhaps: "perhaps" is not one of the choices ("yes", "no")');
    expect(refusal(row({}))).toMatch(/^d\.jsonl:1: give either "label" .* not neither$/);
    expect(refusal(row({ label: 'yes', target_probs: { yes: 1 } }))).toMatch(/not both$/);
    expect(refusal(JSON.stringify({ question: 'q', choices: [{ label: 'a' }], label: 'a' }))).toMatch(/^d\.jsonl:1: choices: /);
    expect(refusal(JSON.stringify({ question: 'q', choices: [{ label: 'a' }, { label: 'a' }], label: 'a' }))).toBe("d.jsonl:1: choices: Choice labels must be distinct, got ['a', 'a']");
    expect(refusal(row({ label: 'no', weight: 2 }))).toMatch(/^d\.jsonl:1: .*weight/);
    expect(refusal('')).toBe('d.jsonl: no decisions');
  });

  it('the loss: the config’s, else cross_entropy for labels only and brier otherwise; cross_entropy refuses soft targets by line', () => {
    const hard = parseDecisions(row({ label: 'no' }), 'h.jsonl');
    const mixed = parseDecisions(`${row({ label: 'no' })}\n${row({ target_probs: { yes: 1 } })}`, 'm.jsonl');
    expect(resolveLoss(null, hard, 'h.jsonl')).toBe('cross_entropy');
    expect(resolveLoss(null, mixed, 'm.jsonl')).toBe('brier');
    expect(resolveLoss('brier', hard, 'h.jsonl')).toBe('brier');
    expect(() => resolveLoss('cross_entropy', mixed, 'm.jsonl')).toThrow(/loss_fn: cross_entropy trains on one label, but m\.jsonl:2 gives target_probs/);
  });

  it('scores: first argmax agreement, probability on the targets, Brier', () => {
    const rows = parseDecisions(`${row({ label: 'no' })}\n${row({ target_probs: { yes: 0.5, no: 0.5 } })}`, 'd.jsonl');
    const s = scoreDecisions(rows, [[0.25, 0.75], [0.5, 0.5]]);
    expect(s.accuracy).toBe(1); // a tie picks the first, on both sides
    expect(s['target_prob:mean']).toBeCloseTo((0.75 + 0.5) / 2, 12);
    expect(s.brier).toBeCloseTo((0.25 ** 2 * 2 + 0) / 2, 12);
  });

  it('the shipped data: team routing with labels, target probabilities and held-out labels', async () => {
    const data = join(import.meta.dirname, '..', '..', 'data', 'decisions');
    const [train, soft, validation] = await Promise.all(['teams_train', 'teams_soft', 'teams_validation'].map((f) => readDecisions(join(data, `${f}.jsonl`))));
    expect(resolveLoss(null, train, 'train')).toBe('cross_entropy');
    expect(resolveLoss(null, soft, 'soft')).toBe('brier');
    expect(resolveLoss(null, validation, 'validation')).toBe('cross_entropy');
    for (const e of [...train, ...soft, ...validation]) expect(e.decision.labels).toEqual(['billing', 'sdk', 'console', 'cookbook']);
  });

  it('the config names an unknown key and keeps the reference loop’s defaults', () => {
    expect(() => parseWithOverrides(DecisionsConfigSchema, { model_name: 'm', data_path: 'd', batch_sise: 4 }, [], 'c.json')).toThrow(/batch_sise/);
    const cfg = parseWithOverrides(DecisionsConfigSchema, { model_name: 'm', data_path: 'd' }, [], 'c.json') as Record<string, unknown>;
    expect(cfg).toMatchObject({ batch_size: 32, learning_rate: 1e-4, epochs: 1, eval_every: 16, save_every: 0, lora_rank: 32, adam_eps: 1e-12, loss_fn: null });
  });
});
