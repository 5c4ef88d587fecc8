// BFCL (gorilla-llm/Berkeley-Function-Calling-Leaderboard, the "simple" file BFCL_v3_simple.json:
// id, question, function; its ground truth in possible_answer/BFCL_v3_simple.json by id, or inline
// as `ground_truth`), as the reference's _bfcl.py: the functions as indented JSON and the user's
// query in one prompt asking for a `{"name", "arguments"}` object, graded on the raw response
// (thinking and tool-call markup kept, see bfcl-match.ts). Point --data at the JSON file: the
// dataset's folder holds every BFCL category.
//
// The reference's own behaviour is kept where it surprises: a v3 `question` (a list of turns,
// each a list of messages) appears in the prompt as Python's repr of its last turn, and BFCL's
// ground truth (`{function_name: {arg: [allowed values]}}`) has no "name" or "arguments" key, so
// a call with a name never matches it and one without a name matches any (docs/eval.md).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigurationError, DataFormatError } from '../../errors.js';
import { decodedText, extractFunctionCall, matchFunctionCall, type JsonObject } from './bfcl-match.js';
import { exampleId } from './gsm8k.js';
import { pyJsonDumpsIndent2, pyRepr, pyStr } from './py-text.js';
import { buildMessages, type Suite } from './types.js';

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

export function bfclPrompt(funcText: string, userQuery: string): string {
  return (
    `You have access to the following functions:\n\n${funcText}\n\nUser query: ${userQuery}\n\n` +
    "Call the appropriate function with the correct arguments. Respond with a JSON object containing 'name' and 'arguments' keys."
  );
}

/** The query as the reference reads it: the last message's content, or str() of the last turn. */
function userQueryOf(question: unknown): string {
  if (Array.isArray(question) && question.length > 0) {
    const last = question[question.length - 1];
    if (isObject(question[0])) return isObject(last) && 'content' in last ? pyStr(last.content) : '';
    return typeof last === 'string' ? last : pyRepr(last);
  }
  return typeof question === 'string' ? question : pyRepr(question);
}

// The data file a row came from (its `at` is "<file>:<line>" or "<file> row <n>"), for the
// possible_answer file beside it.
const dataFileOf = (at: string) => at.replace(/(:\d+| row \d+)$/, '');

const answersByFile = new Map<string, Map<string, unknown>>();

function possibleAnswer(at: string, id: string): unknown {
  const file = dataFileOf(at);
  const answersPath = path.join(path.dirname(file), 'possible_answer', path.basename(file));
  let answers = answersByFile.get(answersPath);
  if (!answers) {
    let text: string;
    try {
      text = readFileSync(answersPath, 'utf8');
    } catch {
      throw new DataFormatError(`${at}: no "ground_truth" in the row and no ${answersPath} to look id "${id}" up in`);
    }
    answers = new Map();
    text.split('\n').forEach((line, i) => {
      if (line.trim() === '') return;
      let row: unknown;
      try {
        row = JSON.parse(line);
      } catch {
        throw new DataFormatError(`${answersPath}:${i + 1}: not valid JSON`);
      }
      if (isObject(row) && typeof row.id === 'string') answers!.set(row.id, row.ground_truth);
    });
    answersByFile.set(answersPath, answers);
  }
  if (!answers.has(id)) throw new DataFormatError(`${at}: id "${id}" has no ground truth in ${answersPath}`);
  return answers.get(id);
}

function expectedCall(raw: unknown, at: string): JsonObject {
  let parsed = raw;
  if (typeof raw === 'string') {
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new DataFormatError(`${at}: "ground_truth" is not valid JSON`);
    }
  }
  if (Array.isArray(parsed)) parsed = parsed[0];
  if (!isObject(parsed)) throw new DataFormatError(`${at}: the ground truth must be an object (or a list whose first item is one)`);
  return parsed;
}

export const bfcl: Suite = {
  name: 'bfcl',
  description: 'BFCL simple function calling: the first JSON call in the response must match the expected name and arguments',
  dataset: { hubId: 'gorilla-llm/Berkeley-Function-Calling-Leaderboard', name: null, split: 'train' },
  sample: 'bfcl/BFCL_v3_simple.json',
  parseRow(row, at, systemPrompt) {
    if (systemPrompt) throw new ConfigurationError('system_prompt: bfcl sends the functions and query alone (the reference’s BFCLEnv takes no system prompt); leave it unset');
    const question = row.question;
    if (question === undefined || question === null || question === '' || (Array.isArray(question) && question.length === 0)) {
      throw new DataFormatError(`${at}: "question" must be a non-empty list of messages`);
    }
    const id = pyStr(row.id ?? '');
    const expected = expectedCall('ground_truth' in row ? row.ground_truth : possibleAnswer(at, id), at);
    const functions = row.function ?? [];
    const funcText = typeof functions === 'string' ? functions : Array.isArray(functions) ? pyJsonDumpsIndent2(functions) : pyRepr(functions);
    const userQuery = userQueryOf(question);
    return { id: exampleId('bfcl', userQuery), messages: buildMessages(bfclPrompt(funcText, userQuery), systemPrompt), target: expected };
  },
  grade(response, item, ctx) {
    const text = ctx?.message ? decodedText(ctx.message) : response;
    const call = extractFunctionCall(text);
    return { correct: call !== null && matchFunctionCall(call, item.target as JsonObject), extracted: call ? JSON.stringify(call) : '' };
  },
  expected: (item) => JSON.stringify(item.target),
};
