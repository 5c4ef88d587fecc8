// Row formats: how one Hugging Face row becomes this project's row — a conversation (SL), a
// labeled comparison (DPO) or a math problem (RL). The adapters follow the reference's recipes
// (recipes/chat_sl/chat_datasets.py, recipes/preference/datasets.py, recipes/math_rl/math_env.py)
// and end in the same validation as the JSONL loaders, so a bad row reads the same either way.
// Each format names the fields it reads; `dataset.hf.columns` maps a field to a differently named
// column.

import { DataFormatError } from '../errors.js';
import { parseComparisonRow, type LabeledComparison } from '../preference/comparisons.js';
import { TrainOnWhat, type Message } from '../renderers/types.js';
import { extractBoxed } from '../rl/grading.js';
import { parseGsm8kRow, type Gsm8kProblem } from '../rl/envs/math.js';
import { validateConversation } from '../supervised/jsonl.js';
import { HF_CONFIG_PATH } from './config.js';

export type FormatKind = 'chat' | 'preference' | 'problem';

/** A row the format skips on purpose (as the reference's adapters return None), with why. */
export interface Skipped {
  skip: string;
}

/** Reads a format field from a row through the column mapping. */
export type FieldReader = (field: string) => unknown;

interface Format<T> {
  kind: FormatKind;
  /** Fields read from the row (the column names unless mapped); empty: the row is read whole. */
  fields: readonly string[];
  /** The reference recipe's default train_on_what, when it differs from the dataset's default. */
  trainOnWhat?: TrainOnWhat;
  map(field: FieldReader, row: Record<string, unknown>, at: string): T | Skipped;
}

// ---------------------------------------------------------------------------------------------
// helpers

/** Arrow and parquet give every struct field to every message (absent ones as null): drop those. */
function dropNullKeys(messages: unknown): unknown {
  if (!Array.isArray(messages)) return messages;
  return messages.map((m) =>
    m !== null && typeof m === 'object' && !Array.isArray(m) ? Object.fromEntries(Object.entries(m).filter(([, v]) => v !== null && v !== undefined)) : m,
  );
}

function text(value: unknown, field: string, at: string): string {
  if (typeof value !== 'string') throw new DataFormatError(`${at}: "${field}" must be a string, got ${value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value}`);
  return value;
}

const user = (content: string): Message => ({ role: 'user', content });
const assistant = (content: string): Message => ({ role: 'assistant', content });

/** A comparison checked by the JSONL loader's own validation. */
function comparison(prompt: unknown, a: unknown, b: unknown, label: 'A' | 'B', at: string): LabeledComparison {
  return parseComparisonRow({ comparison: { prompt_conversation: dropNullKeys(prompt), completion_A: dropNullKeys(a), completion_B: dropNullKeys(b) }, label }, at);
}

/** The reference's `_hhh_parse_conversation`: "Human: … Assistant: …" text to messages. */
export function parseHhhConversation(textValue: string): Message[] {
  const parts = textValue.split(/(Human:|Assistant:)/);
  if (parts[0].trim() === '') parts.shift();
  const out: Message[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const delimiter = parts[i].trim();
    const content = parts[i + 1].trim();
    if (delimiter === 'Human:') out.push(user(content));
    else if (delimiter === 'Assistant:') out.push(assistant(content));
  }
  return out;
}

const sameMessage = (a: Message, b: Message) => a.role === b.role && a.content === b.content;

/** The reference's `_arena_parse_conversation`: text parts joined by spaces; null for non-text content. */
function parseArenaConversation(conversation: unknown, field: string, at: string): Message[] | null {
  if (!Array.isArray(conversation)) throw new DataFormatError(`${at}: "${field}" must be a list of messages`);
  const out: Message[] = [];
  for (const msg of conversation as Array<{ role?: unknown; content?: unknown }>) {
    if (!Array.isArray(msg?.content)) throw new DataFormatError(`${at}: "${field}" messages need a list "content"`);
    const texts: string[] = [];
    for (const item of msg.content as Array<{ type?: unknown; text?: unknown }>) {
      if (item?.type !== 'text') return null;
      texts.push(typeof item.text === 'string' ? item.text : '');
    }
    if (texts.length && (msg.role === 'user' || msg.role === 'assistant')) out.push({ role: msg.role, content: texts.join(' ') });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// chat (SL)

const messagesFormat = (trainOnWhat?: TrainOnWhat): Format<Message[]> => ({
  kind: 'chat',
  fields: ['messages'],
  trainOnWhat,
  map: (field, _row, at) => validateConversation({ messages: dropNullKeys(field('messages')) }, at),
});

const CHAT_FORMATS = {
  /** A `messages` column of {role, content} (this project's JSONL rows). */
  messages: messagesFormat(),
  /** HuggingFaceH4/no_robots: `messages`, all assistant messages trained (the reference's NoRobotsBuilder). */
  no_robots: messagesFormat(TrainOnWhat.ALL_ASSISTANT_MESSAGES),
  /** allenai/tulu-3-sft-mixture: `messages`, the last assistant message trained (Tulu3Builder). */
  tulu3: messagesFormat(TrainOnWhat.LAST_ASSISTANT_MESSAGE),
  /** `prompt` and `completion`: strings (a user and an assistant message) or lists of messages. */
  prompt_completion: {
    kind: 'chat',
    fields: ['prompt', 'completion'],
    map: (field, _row, at) => {
      const side = (name: string, role: (s: string) => Message): unknown => {
        const v = field(name);
        return typeof v === 'string' ? [role(v)] : dropNullKeys(v);
      };
      const prompt = side('prompt', user);
      const completion = side('completion', assistant);
      if (!Array.isArray(prompt) || !Array.isArray(completion)) throw new DataFormatError(`${at}: "prompt" and "completion" must be strings or lists of messages`);
      return validateConversation({ messages: [...prompt, ...completion] }, at);
    },
  },
} satisfies Record<string, Format<Message[]>>;

// ---------------------------------------------------------------------------------------------
// preference (DPO)

const PREFERENCE_FORMATS = {
  /** This project's comparison rows (see preference/comparisons.ts), read whole. */
  comparison: { kind: 'preference', fields: [], map: (_field, row, at) => parseComparisonRow(row, at) },
  /** Anthropic/hh-rlhf: `chosen`/`rejected` transcripts that differ only in the last reply. */
  hhh: {
    kind: 'preference',
    fields: ['chosen', 'rejected'],
    map: (field, _row, at) => {
      const chosen = parseHhhConversation(text(field('chosen'), 'chosen', at));
      const rejected = parseHhhConversation(text(field('rejected'), 'rejected', at));
      if (chosen.length !== rejected.length || chosen.length === 0) return { skip: 'chosen and rejected have different numbers of turns' };
      const same = chosen.map((m, i) => sameMessage(m, rejected[i]));
      if (same.slice(0, -1).some((s) => !s) || same[same.length - 1]) return { skip: 'chosen and rejected differ elsewhere than the last message' };
      return comparison(chosen.slice(0, -1), [chosen[chosen.length - 1]], [rejected[rejected.length - 1]], 'A', at);
    },
  },
  /** nvidia/HelpSteer3 "preference": `context`, `response1`/`response2`, `overall_preference` (<0: 1 is better; 0 skipped). */
  helpsteer3: {
    kind: 'preference',
    fields: ['context', 'response1', 'response2', 'overall_preference'],
    map: (field, _row, at) => {
      const pref = field('overall_preference');
      if (typeof pref !== 'number') throw new DataFormatError(`${at}: "overall_preference" must be a number`);
      if (pref === 0) return { skip: 'a tie (overall_preference 0)' };
      return comparison(field('context'), [assistant(text(field('response1'), 'response1', at))], [assistant(text(field('response2'), 'response2', at))], pref < 0 ? 'A' : 'B', at);
    },
  },
  /** argilla/ultrafeedback-binarized-preferences: `instruction`, `chosen_response`, `rejected_response`. */
  ultrafeedback: {
    kind: 'preference',
    fields: ['instruction', 'chosen_response', 'rejected_response'],
    map: (field, _row, at) =>
      comparison(
        [user(text(field('instruction'), 'instruction', at))],
        [assistant(text(field('chosen_response'), 'chosen_response', at))],
        [assistant(text(field('rejected_response'), 'rejected_response', at))],
        'A',
        at,
      ),
  },
  /** allenai/llama-3.1-tulu-3-8b-preference-mixture: `prompt`, and `chosen`/`rejected` whose message 1 is the reply. */
  tulu3_preference: {
    kind: 'preference',
    fields: ['prompt', 'chosen', 'rejected'],
    map: (field, _row, at) => {
      const reply = (name: string): string => {
        const v = field(name) as Array<{ content?: unknown }> | unknown;
        if (!Array.isArray(v) || v.length < 2) throw new DataFormatError(`${at}: "${name}" must be a list of at least 2 messages (prompt, reply)`);
        return text(v[1]?.content, `${name}[1].content`, at);
      };
      return comparison([user(text(field('prompt'), 'prompt', at))], [assistant(reply('chosen'))], [assistant(reply('rejected'))], 'A', at);
    },
  },
  /** lmarena-ai/arena-human-preference-140k: `winner` (model_a/model_b; others skipped), `conversation_a`/`conversation_b`. */
  arena: {
    kind: 'preference',
    fields: ['winner', 'conversation_a', 'conversation_b'],
    map: (field, _row, at) => {
      const winner = field('winner');
      if (winner !== 'model_a' && winner !== 'model_b') return { skip: `winner is ${JSON.stringify(winner)}` };
      const a = parseArenaConversation(field('conversation_a'), 'conversation_a', at);
      const b = parseArenaConversation(field('conversation_b'), 'conversation_b', at);
      if (!a || !b) return { skip: 'non-text content' };
      if (a.length < 2 || b.length < 2) return { skip: 'too few messages' };
      if (a[a.length - 1].role !== 'assistant' || b[b.length - 1].role !== 'assistant') return { skip: 'the last message is not the assistant' };
      return comparison(a.slice(0, 1), a.slice(1), b.slice(1), winner === 'model_a' ? 'A' : 'B', at);
    },
  },
} satisfies Record<string, Format<LabeledComparison>>;

// ---------------------------------------------------------------------------------------------
// problems (RL)

type Problem = Omit<Gsm8kProblem, 'line'>;

/**
 * The reference reads these rows with `x.get(field, "")` and drops a falsy one when its batch is
 * made, so a missing value becomes "" (dropped later, keeping the batch boundaries) instead of an error.
 */
function loosePromptAnswer(questionField: string, answerField: string): Format<Problem> {
  const value = (v: unknown, name: string, at: string): string => {
    if (v === null || v === undefined) return '';
    if (typeof v === 'number') return String(v);
    return text(v, name, at);
  };
  return {
    kind: 'problem',
    fields: [questionField, answerField],
    map: (field, _row, at) => ({ question: value(field(questionField), questionField, at), solution: '', answer: value(field(answerField), answerField, at) }),
  };
}

const PROBLEM_FORMATS = {
  /** openai/gsm8k: `question` and `answer` ending in "#### <final answer>". */
  gsm8k: {
    kind: 'problem',
    fields: ['question', 'answer'],
    map: (field, _row, at) => parseGsm8kRow({ question: field('question'), answer: field('answer') }, at, 0),
  },
  /** Hendrycks MATH / MATH-500: `problem` and a `solution` whose \boxed{} holds the answer. */
  math: {
    kind: 'problem',
    fields: ['problem', 'solution'],
    map: (field, _row, at) => {
      const question = text(field('problem'), 'problem', at);
      const solution = text(field('solution'), 'solution', at);
      let answer: string;
      try {
        answer = extractBoxed(solution);
      } catch {
        throw new DataFormatError(`${at}: "solution" has no \\boxed{…} answer`);
      }
      return { question, solution, answer };
    },
  },
  /** POLARIS-Project/Polaris-Dataset-53K: `problem`, `answer`; an empty one is kept here and dropped from its batch (math-hf.ts). */
  polaris: loosePromptAnswer('problem', 'answer'),
  /** zwhe99/DeepMath-103K: `question`, `final_answer`; an empty one is dropped from its batch, as for polaris. */
  deepmath: loosePromptAnswer('question', 'final_answer'),
} satisfies Record<string, Format<Problem>>;

// ---------------------------------------------------------------------------------------------

const FORMATS = { chat: CHAT_FORMATS, preference: PREFERENCE_FORMATS, problem: PROBLEM_FORMATS } as const;
const DEFAULT_FORMAT: Record<FormatKind, string> = { chat: 'messages', preference: 'comparison', problem: 'gsm8k' };

export type ChatRowFormat = keyof typeof CHAT_FORMATS;
export type PreferenceRowFormat = keyof typeof PREFERENCE_FORMATS;
export type ProblemRowFormat = keyof typeof PROBLEM_FORMATS;

export interface RowFormatOf {
  chat: Message[];
  preference: LabeledComparison;
  problem: Problem;
}

/** A format bound to a column mapping: turns a raw row into a project row (or a skip). */
export interface BoundFormat<T> {
  name: string;
  trainOnWhat?: TrainOnWhat;
  /** The columns to read (undefined: all). */
  columns?: string[];
  /** `columns` are alternatives: read those of them a file has (parquet), not all or nothing. */
  someColumns?: boolean;
  map(row: Record<string, unknown>, at: string): T | Skipped;
}

export function formatNames(kind: FormatKind): string[] {
  return Object.keys(FORMATS[kind]);
}

/**
 * The format `name` (default per kind) of `kind` bound to `columns` (field → column). Unknown
 * formats and fields are DataFormatErrors naming the config path.
 */
export function bindFormat<K extends FormatKind>(kind: K, name: string | undefined, columns: Record<string, string>): BoundFormat<RowFormatOf[K]> {
  const formats = FORMATS[kind] as unknown as Record<string, Format<RowFormatOf[K]>>;
  const chosen = name ?? DEFAULT_FORMAT[kind];
  const format = formats[chosen];
  if (!format) throw new DataFormatError(`${HF_CONFIG_PATH}.format: unknown ${kind} format "${chosen}" (formats: ${Object.keys(formats).join(', ')})`);
  for (const key of Object.keys(columns)) {
    if (!format.fields.includes(key)) {
      throw new DataFormatError(`${HF_CONFIG_PATH}.columns.${key}: format "${chosen}" has no field "${key}" (fields: ${format.fields.join(', ') || 'none: it reads whole rows'})`);
    }
  }
  const columnOf = (f: string) => columns[f] ?? f;
  return {
    name: chosen,
    trainOnWhat: format.trainOnWhat,
    columns: format.fields.length ? format.fields.map(columnOf) : undefined,
    map(row, at) {
      const field: FieldReader = (f) => {
        const column = columnOf(f);
        if (!(column in row)) {
          throw new DataFormatError(
            `${at}: no column "${column}" for field "${f}" of format "${chosen}" (${HF_CONFIG_PATH}.columns.${f}); the row's columns: ${Object.keys(row).join(', ') || 'none'}`,
          );
        }
        return row[column];
      };
      return format.map(field, row, at);
    },
  };
}

export const isSkipped = (v: unknown): v is Skipped => v !== null && typeof v === 'object' && 'skip' in v && typeof (v as Skipped).skip === 'string';
