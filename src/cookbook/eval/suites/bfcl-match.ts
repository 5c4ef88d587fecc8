// The reference's BFCL grading (_bfcl.py): the first balanced `{…}` of the response that parses as
// JSON (else the first fenced JSON block) is the call, matched to the expected one by name (when
// both have a string name) and by every expected argument, strings compared stripped and
// lowercased, lists as sorted multisets, numbers and booleans as Python compares them.
import type { Message } from '../../renderers/types.js';
import { pyStrip } from './py-text.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseJson(text: string): Json | undefined {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
}

/** The call the reference reads from a response: an object, or null. */
export function extractFunctionCall(text: string): JsonObject | null {
  const start = text.indexOf('{');
  if (start !== -1) {
    let depth = 0;
    for (let i = start; i < text.length; i++) {
      if (text[i] === '{') depth++;
      else if (text[i] === '}' && --depth === 0) {
        const parsed = parseJson(text.slice(start, i + 1));
        if (isObject(parsed)) return parsed;
        break;
      }
    }
  }
  const fenced = /```(?:json)?\s*\n([\s\S]*?)\n```/.exec(text);
  if (fenced) {
    const parsed = parseJson(fenced[1]!.trim());
    if (isObject(parsed)) return parsed;
    if (Array.isArray(parsed) && parsed.length > 0 && isObject(parsed[0])) return parsed[0];
  }
  return null;
}

/** Python's ordering of the values a sort of normalized values meets; undefined where Python raises TypeError. */
function pyCompare(a: Json, b: Json): number | undefined {
  const num = (v: Json) => (typeof v === 'boolean' ? Number(v) : typeof v === 'number' ? v : undefined);
  const na = num(a);
  const nb = num(b);
  if (na !== undefined && nb !== undefined) return na - nb;
  if (typeof a === 'string' && typeof b === 'string') {
    const ca = [...a];
    const cb = [...b];
    for (let i = 0; i < Math.min(ca.length, cb.length); i++) {
      const d = ca[i]!.codePointAt(0)! - cb[i]!.codePointAt(0)!;
      if (d !== 0) return d;
    }
    return ca.length - cb.length;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      if (pyEqual(a[i]!, b[i]!)) continue;
      return pyCompare(a[i]!, b[i]!);
    }
    return a.length - b.length;
  }
  return undefined;
}

class Unorderable extends Error {}

function normalize(v: Json): Json {
  if (typeof v === 'string') return pyStrip(v).toLowerCase();
  if (Array.isArray(v)) {
    return v.map(normalize).sort((a, b) => {
      const d = pyCompare(a, b);
      if (d === undefined) throw new Unorderable();
      return d;
    });
  }
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalize(x)]));
  return v;
}

/** Python's `==` on JSON values (True == 1, 1 == 1.0). */
function pyEqual(a: Json, b: Json): boolean {
  const num = (v: Json) => (typeof v === 'boolean' ? Number(v) : typeof v === 'number' ? v : undefined);
  if (num(a) !== undefined && num(b) !== undefined) return num(a) === num(b);
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => pyEqual(x, b[i]!));
  if (isObject(a) || isObject(b)) {
    if (!isObject(a) || !isObject(b)) return false;
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && pyEqual(a[k]!, b[k]!));
  }
  return a === b;
}

const getOr = (o: JsonObject, key: string, fallback: Json): Json => (key in o ? o[key]! : fallback);

/**
 * The reference's match. A list the reference cannot sort (mixed types, objects) makes its grader
 * raise; here that call does not match.
 */
export function matchFunctionCall(generated: JsonObject, expected: JsonObject): boolean {
  const genName = getOr(generated, 'name', getOr(generated, 'function', ''));
  const expName = getOr(expected, 'name', getOr(expected, 'function', ''));
  if (typeof genName === 'string' && typeof expName === 'string' && pyLowerStrip(genName) !== pyLowerStrip(expName)) return false;
  const genArgs = getOr(generated, 'arguments', getOr(generated, 'parameters', {}));
  const expArgs = getOr(expected, 'arguments', getOr(expected, 'parameters', {}));
  if (!isObject(genArgs) || !isObject(expArgs)) return false;
  try {
    return Object.entries(expArgs).every(([key, want]) => key in genArgs && pyEqual(normalize(genArgs[key]!), normalize(want)));
  } catch (err) {
    if (err instanceof Unorderable) return false;
    throw err;
  }
}

const pyLowerStrip = (s: string) => normalize(s) as string;

/**
 * The text the reference grades: it decodes the sampled tokens raw (thinking and tool-call markup
 * kept). From the parsed message: the thinking and text in order, then each tool call as the JSON
 * object the model wrote (`{"name": …, "arguments": …}`), then any call that did not parse.
 */
export function decodedText(message: Message): string {
  const parts = typeof message.content === 'string'
    ? [message.content]
    : message.content.map((p) => (p.type === 'text' ? p.text : p.type === 'thinking' ? p.thinking : ''));
  const calls = (message.tool_calls ?? []).map((c) => `{"name": ${JSON.stringify(c.function.name)}, "arguments": ${c.function.arguments}}`);
  const unparsed = (message.unparsed_tool_calls ?? []).map((c) => c.raw_text);
  return [...parts, ...calls, ...unparsed].join('\n');
}
