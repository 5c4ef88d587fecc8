// Decisions (reference recipes/decisions/decision.py): a question with a fixed set of choices,
// rendered so that one answer token selects a choice. A ChoiceRenderer decides how answers are
// written; the default PrefixedChoiceRenderer writes `choice#A`, `choice#B`, ….
import { ConfigurationError, DataValidationError, RendererError } from '../../errors.js';
import { modelInputToInts } from '../../model-input.js';
import type { Message, Renderer } from '../../renderers/types.js';
import type { Tokenizer } from '../../tokenizer.js';

/** A choice: the label that keys results, and what the model is shown about it (may be empty). */
export type Choice = readonly [label: string, description: string];

/** A question and its ordered choices: at least two, with distinct labels. */
export class Decision {
  readonly choices: readonly Choice[];

  constructor(
    readonly text: string,
    choices: readonly Choice[],
  ) {
    this.choices = choices.map(([label, description]) => [label, description] as const);
    const labels = this.labels;
    if (labels.length < 2) throw new DataValidationError(`A decision needs at least two choices, got ${pyList(labels)}`);
    if (new Set(labels).size !== labels.length) throw new DataValidationError(`Choice labels must be distinct, got ${pyList(labels)}`);
  }

  /** The choice labels, in choice order. */
  get labels(): string[] {
    return this.choices.map(([label]) => label);
  }
}

/**
 * A rendered decision: `tokens` end at the answer position `choicePos`, where the token is a
 * placeholder, and `labelTokens` gives the token that selects each label (in choice order).
 */
export interface DecisionRendering {
  tokens: number[];
  choicePos: number;
  labelTokens: Map<string, number>;
}

/** The labels of a rendering, in choice order. */
export const renderingLabels = (r: DecisionRendering): string[] => [...r.labelTokens.keys()];

/** `tokens` with `label`'s token at the answer position. */
export function withLabel(r: DecisionRendering, label: string): number[] {
  const token = r.labelTokens.get(label);
  if (token === undefined) throw new DataValidationError(`target must be one of ${pyList(renderingLabels(r))}, got ${pyRepr(label)}`);
  const tokens = [...r.tokens];
  tokens[r.choicePos] = token;
  return tokens;
}

/**
 * The reply the model is told to write, with a placeholder token at `answerPosition` (e.g.
 * `choice#?`), and the token that replaces it for each label.
 */
export interface ChoiceRendering {
  answerTokens: number[];
  answerPosition: number;
  labelTokens: Map<string, number>;
}

/** The reply tokens that select `label`. */
export function answerTokensFor(c: ChoiceRendering, label: string): number[] {
  const tokens = [...c.answerTokens];
  tokens[c.answerPosition] = c.labelTokens.get(label)!;
  return tokens;
}

/** Decides how a set of labels is answered; `labelTokens` must be keyed by `labels`. */
export interface ChoiceRenderer {
  renderChoices(labels: readonly string[]): ChoiceRendering;
}

const IDS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/**
 * Answer with `<prefix><id>` for the ids A, B, C, … in choice order, shown to the model as
 * `<prefix><placeholder>`. Every id and the placeholder must be exactly one token after the
 * prefix, else ConfigurationError. Up to 26 choices.
 */
export class PrefixedChoiceRenderer implements ChoiceRenderer {
  private readonly prefixTokens: number[];
  private readonly answerTokens: number[];

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly prefix = 'choice#',
    placeholder = '?',
  ) {
    this.prefixTokens = tokenizer.encode(prefix, { addSpecialTokens: false });
    this.answerTokens = tokenizer.encode(prefix + placeholder, { addSpecialTokens: false });
    const n = this.prefixTokens.length;
    if (!startsWith(this.answerTokens, this.prefixTokens) || this.answerTokens.length !== n + 1) {
      throw new ConfigurationError(
        `The placeholder ${pyRepr(placeholder)} must be exactly one token after the prefix ${pyRepr(prefix)}, got ${pyList(this.answerTokens)} vs prefix ${pyList(this.prefixTokens)}`,
      );
    }
  }

  renderChoices(labels: readonly string[]): ChoiceRendering {
    if (labels.length > IDS.length) throw new ConfigurationError(`At most ${IDS.length} choices are supported, got ${labels.length}`);
    const n = this.prefixTokens.length;
    const labelTokens = new Map<string, number>();
    const problems: string[] = [];
    labels.forEach((label, i) => {
      const id = IDS[i];
      const tokens = this.tokenizer.encode(this.prefix + id, { addSpecialTokens: false });
      if (startsWith(tokens, this.prefixTokens) && tokens.length === n + 1) labelTokens.set(label, tokens[n]);
      else {
        const pieces = tokens.slice(n).map((t) => pyRepr(this.tokenizer.decode([t])));
        problems.push(`${pyRepr(id)} -> [${pieces.length ? pieces.join(', ') : "'<merged into prefix>'"}]`);
      }
    });
    if (problems.length) {
      throw new ConfigurationError(
        `Every choice id must be exactly one token after the prefix ${pyRepr(this.prefix)}; these are not: ${problems.join(', ')}. Pick a prefix that ends at a token boundary.`,
      );
    }
    if (new Set(labelTokens.values()).size !== labelTokens.size) {
      throw new ConfigurationError(`Choice ids must tokenize to distinct tokens after the prefix ${pyRepr(this.prefix)}`);
    }
    return { answerTokens: this.answerTokens, answerPosition: n, labelTokens };
  }
}

const SYSTEM_PROMPT = (answerFormat: string) =>
  `Answer the user's question by picking exactly one of the choices they supply. Reply with the id of your choice, written as \`${answerFormat}\`, and nothing else.`;

const USER_PROMPT = (decision: string, choices: string) => `${decision}\n\nChoices (your answer must be exactly one of these):\n${choices}`;

/**
 * Renders a Decision into the tokens `sampleDecision` scores and the datums train on: a system
 * message with the answer format, a user message with the question and choices, and the answer
 * format as the assistant reply, cut at the answer token. (The reference's `effort` applies to
 * Inkling's tml_v0 renderer only, which this project does not have.)
 */
export class DecisionRenderer {
  readonly tokenizer: Tokenizer;
  readonly choiceRenderer: ChoiceRenderer;

  constructor(
    readonly renderer: Renderer,
    tokenizer: Tokenizer,
    choiceRenderer?: ChoiceRenderer,
  ) {
    this.tokenizer = tokenizer;
    this.choiceRenderer = choiceRenderer ?? new PrefixedChoiceRenderer(tokenizer);
  }

  render(decision: Decision): DecisionRendering {
    const choice = this.renderChoices(decision);
    const answer = choice.answerTokens;
    const messages: Message[] = [...this.buildMessages(decision, choice), { role: 'assistant', content: this.tokenizer.decode(answer) }];
    const tokens = modelInputToInts(this.renderer.buildSupervisedExample(messages).modelInput);
    const n = answer.length;
    let start = -1;
    for (let i = tokens.length - n; i >= 0 && start < 0; i--) if (startsWith(tokens.slice(i, i + n), answer)) start = i;
    if (start < 0) {
      throw new RendererError(
        `The reply tokens ${pyList(answer)} do not appear in the rendered conversation; the chat template tokenized the reply differently from the choice renderer.`,
      );
    }
    const choicePos = start + choice.answerPosition;
    return {
      tokens: tokens.slice(0, choicePos + 1),
      choicePos,
      labelTokens: new Map(decision.labels.map((label) => [label, choice.labelTokens.get(label)!])),
    };
  }

  private renderChoices(decision: Decision): ChoiceRendering {
    const labels = decision.labels;
    const choice = this.choiceRenderer.renderChoices(labels);
    const keys = [...choice.labelTokens.keys()];
    if (keys.length !== labels.length || !labels.every((l) => choice.labelTokens.has(l))) {
      throw new RendererError(`The choice renderer returned label_tokens keyed by ${pyList([...keys].sort())}, expected the decision's labels ${pyList(labels)}.`);
    }
    return choice;
  }

  private buildMessages(decision: Decision, choice: ChoiceRendering): Message[] {
    const decode = (tokens: number[]) => this.tokenizer.decode(tokens);
    const lines = decision.choices.map(([label, description]) => {
      const reply = decode(answerTokensFor(choice, label));
      const id = decode([choice.labelTokens.get(label)!]);
      const line = id === label ? reply : `${reply} = "${label}"`;
      return description ? `${line}: ${description}` : line;
    });
    return [
      { role: 'system', content: SYSTEM_PROMPT(decode(choice.answerTokens)) },
      { role: 'user', content: USER_PROMPT(decision.text, lines.join('\n')) },
    ];
  }
}

function startsWith(xs: readonly number[], prefix: readonly number[]): boolean {
  return prefix.length <= xs.length && prefix.every((t, i) => xs[i] === t);
}

/** Python's repr of a string (the reference's messages quote with it). */
export function pyRepr(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r');
  return q + (q === "'" ? body.replace(/'/g, "\\'") : body) + q;
}

function pyList(xs: ReadonlyArray<string | number>): string {
  return `[${xs.map((x) => (typeof x === 'string' ? pyRepr(x) : String(x))).join(', ')}]`;
}
