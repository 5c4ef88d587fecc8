// `cookbook decide`: the reference's decisions demo (recipes/decisions/demo.py) as a command — a
// model or a trained checkpoint as a decision model, printing the probability of each choice.
// With no --choice it routes questions about Tinker to the team that can answer them, as the demo.
// The question comes from the command line, else one per line from stdin (a terminal gets a prompt).
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { ConfigError } from '../cookbook/config/overrides.js';
import { applyWireFlag, DEFAULT_ENGINE_URL } from './connect.js';

export const DECIDE_USAGE = `  decide <tinker path | base model>   probability of each choice for a question (the decisions recipe's demo);
        ["<question>"] [--choice L[:D] …]   --choice: a label and its description (repeat; default: the demo's Tinker
        [--renderer NAME] [--tokenizer-path DIR]   teams); no question: one per stdin line, JSON per line`;

/** demo.py's teams. */
const TEAMS: Array<[string, string]> = [
  ['billing', 'Charges, invoices, credits, payment methods and pricing'],
  ['sdk', 'The tinker Python package: installation, API errors, training and sampling calls'],
  ['console', 'The web console: signing in, API keys, viewing runs and checkpoints'],
  ['cookbook', 'The Tinker Cookbook recipes: training loops, renderers, evaluations and docs'],
];
const teamQuestion = (q: string) => `A user asked the following question about Tinker:\n\n${q}\n\nWhich team should answer it?`;

/** `label:description` (the description may hold colons; none: an empty description). */
export function parseChoice(spec: string): [string, string] {
  const at = spec.indexOf(':');
  const [label, description] = at < 0 ? [spec, ''] : [spec.slice(0, at), spec.slice(at + 1)];
  if (!label.trim()) throw new ConfigError(`--choice "${spec}": give a label, as --choice label:description`);
  return [label.trim(), description.trim()];
}

const rounded = (probs: Map<string, number>) => Object.fromEntries([...probs].map(([label, p]) => [label, Math.round(p * 1e4) / 1e4]));

export async function decideCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      choice: { type: 'string', multiple: true },
      renderer: { type: 'string' },
      'tokenizer-path': { type: 'string' },
      'engine-url': { type: 'string' },
      wire: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(DECIDE_USAGE);
    return 0;
  }
  const [source, question, ...extra] = positionals;
  if (!source || extra.length) throw new ConfigError('decide: usage `cookbook decide <tinker://…/sampler_weights/… path | base model> ["<question>"] [--choice label:description …]`');
  const custom = (values.choice ?? []).map(parseChoice);
  const choices = custom.length ? custom : TEAMS;
  const frame = custom.length ? (q: string) => q : teamQuestion;
  const [{ Decision, DecisionRenderer, sampleDecision }, { openServedModel }] = await Promise.all([import('../cookbook/supervised/decisions/index.js'), import('../serve/served-model.js')]);
  // Checked before the backend is contacted: two choices at least, distinct labels.
  try {
    new Decision('check', choices);
  } catch (err) {
    throw new ConfigError(`--choice: ${(err as Error).message}`);
  }
  applyWireFlag(values.wire);
  const baseUrl = values['engine-url'] ?? process.env.TINKER_BASE_URL ?? DEFAULT_ENGINE_URL;
  const model = await openServedModel({ source, baseUrl, rendererName: values.renderer, tokenizerPath: values['tokenizer-path'] });
  try {
    const renderer = new DecisionRenderer(model.renderer, model.tokenizer);
    const decide = async (q: string) => rounded(await sampleDecision(model, renderer.render(new Decision(frame(q), choices))));
    if (question !== undefined) {
      console.log(JSON.stringify(await decide(question), null, 2));
      return 0;
    }
    const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY);
    const lines = createInterface({ input: process.stdin, terminal: interactive });
    const prompt = custom.length ? 'Question (empty to quit): ' : 'Ask a question about Tinker (empty to quit): ';
    if (interactive) process.stdout.write(prompt);
    for await (const line of lines) {
      const q = line.trim();
      if (!q) {
        if (interactive) break;
        continue; // a blank line in piped input is skipped, not the end
      }
      const probs = await decide(q);
      console.log(interactive ? JSON.stringify(probs, null, 2) : JSON.stringify(probs));
      if (interactive) process.stdout.write(prompt);
    }
    lines.close();
    return 0;
  } finally {
    await model.close();
  }
}
