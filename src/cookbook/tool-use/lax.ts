// pydantic v2's lax-mode conversions for tool arguments. The reference's `@tool` validates a call's
// JSON arguments with `model_validate` in pydantic's default (lax) mode, so a tool declared
// `limit: int` runs with `"2"`, `2.0` or `true`, and a `bool` with `"yes"`. A zod schema is strict;
// `laxSafeParse` walks it beside the arguments and converts, before zod validates, exactly the
// values pydantic converts (its rules, from pydantic-core's str_as_int / str_as_float / str_as_bool
// and its union and literal validators, checked against the installed pydantic by
// test/parity/tool-use-lax.parity.test.ts). Whatever pydantic refuses is left as it was, so zod
// refuses it with its usual message. The declared JSON schema is not touched: the declared type
// (`integer` or `number`) is what decides how a number converts.
//
// Deliberately not mirrored (JS numbers cannot carry them, and z.number() promises finite values):
// - "inf", "nan", "1e400": pydantic's float takes them (±inf, nan); here they stay strings and
//   zod refuses them.
// - integers past ±(2^53−1): pydantic's int is unbounded; here the string converts to the nearest
//   double, which z.int() refuses as too big, as it already refuses such a JSON number.
// JSON.parse cannot keep `1.0` apart from `1`: an integral number is taken as a JSON int (exact for
// `int`, strict for `float`), which only shows in unions pydantic would resolve by float-ness.
import { z } from 'zod';

/** pydantic-core's Exactness: how closely a value matched a type, used to choose a union member. */
enum Exactness {
  Lax = 0,
  Strict = 1,
  Exact = 2,
}

interface Coerced {
  value: unknown;
  exactness: Exactness;
  /** Model fields taken from the input (pydantic's fields_set_count); undefined where no model. */
  fieldsSet?: number;
}

type Def = { type: string } & Record<string, unknown>;
const defOf = (schema: z.core.$ZodType): Def => schema._zod.def as unknown as Def;

/** Returns `value` with pydantic's lax conversions applied wherever `schema` expects another type. */
export function laxCoerce(schema: z.core.$ZodType, value: unknown): unknown {
  return coerce(schema, value).value;
}

const same = (value: unknown, exactness = Exactness.Exact): Coerced => ({ value, exactness });

function coerce(schema: z.core.$ZodType, value: unknown): Coerced {
  const def = defOf(schema);
  switch (def.type) {
    case 'number':
      return isIntegerType(schema) ? coerceInt(value) : coerceFloat(value);
    case 'boolean':
      return coerceBool(value);
    case 'literal':
    case 'enum':
      return coerceLiteral([...(schema._zod.values ?? [])], value);
    case 'array':
      return Array.isArray(value) ? coerceItems(value.map((v) => coerce(def.element as z.core.$ZodType, v)), Exactness.Exact) : same(value);
    case 'tuple':
      return coerceTuple(def, value);
    case 'object':
      return coerceObject(def.shape as Record<string, z.core.$ZodType>, value);
    case 'record':
      return coerceRecord(def.valueType as z.core.$ZodType, value);
    case 'union':
      return coerceUnion(def.options as z.core.$ZodType[], value);
    case 'nullable':
      // Optional[X] is X | None: None is an exact match, anything else is X's.
      return value === null ? same(value) : coerce(def.innerType as z.core.$ZodType, value);
    case 'optional':
    case 'default':
    case 'prefault':
      // A missing field is zod's to fill (or refuse); pydantic does not validate defaults either.
      return value === undefined ? same(value) : coerce(def.innerType as z.core.$ZodType, value);
    case 'catch':
    case 'readonly':
    case 'nonoptional':
      return coerce(def.innerType as z.core.$ZodType, value);
    case 'lazy':
      return coerce((def.getter as () => z.core.$ZodType)(), value);
    case 'pipe': {
      // The input side declares the type; a preprocess (a transform on that side) sees the raw value.
      const input = def.in as z.core.$ZodType;
      return defOf(input).type === 'transform' ? same(value) : coerce(input, value);
    }
    default:
      // string (pydantic's str takes nothing else a JSON value can be), null, any, and types
      // without a pydantic counterpart: as they are.
      return same(value);
  }
}

// The JSON schema a tool declares says `integer` or `number`; pydantic coerces to that (`int` or
// `float`). Cached: the answer never changes for a schema, and tools run many times.
const integerTypes = new WeakMap<z.core.$ZodType, boolean>();
function isIntegerType(schema: z.core.$ZodType): boolean {
  let known = integerTypes.get(schema);
  if (known === undefined) {
    known = (z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as { type?: unknown }).type === 'integer';
    integerTypes.set(schema, known);
  }
  return known;
}

// --- scalars -----------------------------------------------------------------------------------

/** int: integral numbers (−0 is 0: Python ints have no sign), bools, and int-like strings. */
function coerceInt(value: unknown): Coerced {
  if (typeof value === 'number') return Number.isInteger(value) ? same(value === 0 ? 0 : value) : same(value);
  if (typeof value === 'boolean') return same(Number(value), Exactness.Lax);
  if (typeof value === 'string') {
    const parsed = pyStrAsInt(value);
    if (parsed !== undefined) return same(Number(parsed), Exactness.Lax);
  }
  return same(value);
}

/** float: any number (an int is a strict match, as Python's int for a float), bools, float-like strings. */
function coerceFloat(value: unknown): Coerced {
  if (typeof value === 'number') return same(value, Number.isInteger(value) ? Exactness.Strict : Exactness.Exact);
  if (typeof value === 'boolean') return same(Number(value), Exactness.Lax);
  if (typeof value === 'string') {
    const parsed = pyStrAsFloat(value);
    // Non-finite results are pydantic's too, but not z.number()'s: left for zod to refuse.
    if (parsed !== undefined && Number.isFinite(parsed)) return same(parsed, Exactness.Lax);
  }
  return same(value);
}

const FALSE_WORDS = new Set(['0', 'f', 'n', 'no', 'off', 'false']);
const TRUE_WORDS = new Set(['1', 't', 'y', 'on', 'yes', 'true']);
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

/** bool: 0 and 1 (also as 0.0, 1.0), and pydantic's words, ASCII case-insensitive, not trimmed. */
function coerceBool(value: unknown): Coerced {
  if (typeof value === 'boolean') return same(value);
  if (value === 0 || value === 1) return same(value === 1, Exactness.Lax);
  if (typeof value === 'string') {
    const word = asciiLower(value);
    if (FALSE_WORDS.has(word)) return same(false, Exactness.Lax);
    if (TRUE_WORDS.has(word)) return same(true, Exactness.Lax);
  }
  return same(value);
}

/**
 * Literal[...] (z.literal, z.enum): Python equality, so the number 1 matches True and true matches
 * 1 (bool is an int there), while strings never match numbers. The value the tool gets is the
 * declared one (Literal[0] given -0.0 gives 0).
 */
function coerceLiteral(values: readonly unknown[], value: unknown): Coerced {
  for (const v of values) if (v === value) return same(v);
  if (typeof value === 'boolean' || typeof value === 'number') {
    for (const v of values) {
      if ((typeof v === 'boolean' || typeof v === 'number') && Number(v) === Number(value)) return same(v);
    }
  }
  return same(value);
}

// --- strings as numbers (pydantic-core src/input/shared.rs) --------------------------------------

// Rust's str::trim: Unicode White_Space, which is neither Python's str.strip (\x1c-\x1f) nor JS's
// trim (U+FEFF, not U+0085).
const RUST_WS = '\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const RUST_TRIM = new RegExp(`^[${RUST_WS}]+|[${RUST_WS}]+$`, 'g');
const rustTrim = (s: string) => s.replace(RUST_TRIM, '');

// A JSON integer (what pydantic-core's first, fast parse takes).
const JSON_INT = /^-?(?:0|[1-9][0-9]*)$/;
// Rust's f64 grammar: optional sign, then inf/infinity/nan (any case) or decimal digits with an
// optional fraction and exponent; no hex, no whitespace, ASCII digits only.
const RUST_FLOAT = /^[+-]?(?:inf|infinity|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?)$/i;

/** Python-style digit grouping: `1_000`, but not `_1`, `1_` or `1__0`. */
function stripUnderscores(s: string): string | undefined {
  if (s.startsWith('_') || s.endsWith('_') || !s.includes('_') || s.includes('__')) return undefined;
  return s.replaceAll('_', '');
}

/** `00_12` → `12`, `000` → `0`, `00.0` → `0.0`; anything not starting with a digit: undefined. */
function stripLeadingZeros(s: string): string | undefined {
  const first = s[0];
  if (first === undefined) return undefined;
  if (first !== '0') return (first >= '1' && first <= '9') || first === '-' ? s : undefined;
  for (let i = 1; i < s.length; i++) {
    const c = s[i];
    if (c === '0' || c === '_') continue;
    if ((c >= '1' && c <= '9') || c === '-') return s.slice(i);
    if (c === '.') return s.slice(i - 1);
    return undefined;
  }
  return s.slice(-1);
}

/** clean_int_str: trims, drops one `+`, leading zeros, an all-zero fraction and digit grouping. */
function cleanIntStr(raw: string): string | undefined {
  let s = rustTrim(raw);
  if (s.startsWith('+')) {
    if (s[1] === '-') return undefined;
    s = s.slice(1);
  }
  const negative = s.startsWith('-');
  if (negative) {
    if (s[1] === '-' || s[1] === '+') return undefined;
    s = s.slice(1);
  }
  const unpadded = stripLeadingZeros(s);
  if (unpadded === undefined) return undefined;
  s = unpadded;
  const dot = s.indexOf('.');
  if (dot !== -1 && /^0+$/.test(s.slice(dot + 1))) s = s.slice(0, dot);
  const sign = negative ? '-' : '';
  const ungrouped = stripUnderscores(s);
  if (ungrouped !== undefined) return sign + ungrouped;
  // Nothing was cleaned: the string already failed as it was.
  return s.length === raw.length ? undefined : sign + s;
}

/** str_as_int: the integer a string spells for pydantic's int, or undefined where it refuses. */
export function pyStrAsInt(raw: string): bigint | undefined {
  if (JSON_INT.test(raw)) return BigInt(raw);
  const cleaned = cleanIntStr(raw);
  return cleaned !== undefined && JSON_INT.test(cleaned) ? BigInt(cleaned) : undefined;
}

/** str_as_float: Rust's float parse of the trimmed string, then of the untrimmed one without `_`. */
export function pyStrAsFloat(raw: string): number | undefined {
  const trimmed = rustTrim(raw);
  if (RUST_FLOAT.test(trimmed)) return rustFloat(trimmed);
  const ungrouped = stripUnderscores(raw);
  return ungrouped !== undefined && RUST_FLOAT.test(ungrouped) ? rustFloat(ungrouped) : undefined;
}

/** A string RUST_FLOAT accepts as a number (both round to nearest; JS only spells inf/nan differently). */
function rustFloat(s: string): number {
  const negative = s.startsWith('-');
  const body = s.replace(/^[+-]/, '').toLowerCase();
  if (body === 'nan') return NaN;
  if (body === 'inf' || body === 'infinity') return negative ? -Infinity : Infinity;
  return Number(s);
}

// --- containers ----------------------------------------------------------------------------------

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A container's match is as good as its worst item; model fields set add up through it. */
function coerceItems(items: Coerced[], own: Exactness, ownFieldsSet?: number): Coerced {
  let exactness = own;
  let fieldsSet = ownFieldsSet;
  for (const item of items) {
    exactness = Math.min(exactness, item.exactness);
    if (item.fieldsSet !== undefined) fieldsSet = (fieldsSet ?? 0) + item.fieldsSet;
  }
  return { value: items.map((i) => i.value), exactness, fieldsSet };
}

/** tuple[...] from a JSON array: a list is not a tuple, so the match is lax (as pydantic's python mode). */
function coerceTuple(def: Def, value: unknown): Coerced {
  if (!Array.isArray(value)) return same(value);
  const items = def.items as z.core.$ZodType[];
  const rest = def.rest as z.core.$ZodType | null;
  return coerceItems(
    value.map((v, i) => {
      const item = i < items.length ? items[i] : rest;
      return item ? coerce(item, v) : same(v);
    }),
    Exactness.Lax,
  );
}

/** A nested model from a dict: strict at best (pydantic builds a new instance); unknown keys kept for zod. */
function coerceObject(shape: Record<string, z.core.$ZodType>, value: unknown): Coerced {
  if (!isPlainObject(value)) return same(value);
  const present = Object.keys(shape).filter((k) => Object.hasOwn(value, k));
  const fields = present.map((k) => coerce(shape[k], value[k]));
  const merged = coerceItems(fields, Exactness.Strict, present.length);
  // Spread and defineProperty keep a `__proto__` key an own property, never the prototype.
  const out: Record<string, unknown> = { ...value };
  present.forEach((k, i) => Object.defineProperty(out, k, { value: fields[i].value, enumerable: true, writable: true, configurable: true }));
  return { ...merged, value: out };
}

/** dict[str, X]: each value converts; JSON keys are strings already. */
function coerceRecord(valueType: z.core.$ZodType, value: unknown): Coerced {
  if (!isPlainObject(value)) return same(value);
  const entries = Object.entries(value);
  const merged = coerceItems(entries.map(([, v]) => coerce(valueType, v)), Exactness.Exact);
  const values = merged.value as unknown[];
  return { ...merged, value: Object.fromEntries(entries.map(([k], i) => [k, values[i]])) };
}

/**
 * pydantic's smart-mode union: every member is tried; an exact match outside a model wins at once,
 * otherwise the member setting more model fields, then the better exactness, then the first. A
 * member counts as matching when zod accepts what it converted (its checks included).
 */
function smartChoice(options: readonly z.core.$ZodType[], value: unknown): { index: number; coerced: Coerced } | undefined {
  let best: { index: number; coerced: Coerced } | undefined;
  for (const [index, option] of options.entries()) {
    const candidate = coerce(option, value);
    if (!z.safeParse(option, candidate.value).success) continue;
    if (candidate.exactness === Exactness.Exact && candidate.fieldsSet === undefined) return { index, coerced: candidate };
    if (!best || isBetter(candidate, best.coerced)) best = { index, coerced: candidate };
  }
  return best;
}

function isBetter(candidate: Coerced, best: Coerced): boolean {
  if (candidate.fieldsSet !== undefined && best.fieldsSet !== undefined && candidate.fieldsSet !== best.fieldsSet) {
    return candidate.fieldsSet > best.fieldsSet;
  }
  return candidate.exactness > best.exactness;
}

/** The chosen member's conversion; with no member matching, the value is left for zod to refuse. */
function coerceUnion(options: readonly z.core.$ZodType[], value: unknown): Coerced {
  return smartChoice(options, value)?.coerced ?? same(value);
}

// --- validation ----------------------------------------------------------------------------------

/**
 * Validates `value` as the reference's model_validate would: pydantic's lax conversions, then zod.
 * zod's union takes its first accepting member where pydantic's smart mode may prefer a later one
 * (of two object members, the one the arguments set more fields of), so each union's output is
 * then the one of the member smart mode chose.
 */
export function laxSafeParse<S extends z.core.$ZodType>(schema: S, value: unknown): z.ZodSafeParseResult<z.output<S>> {
  const result = z.safeParse(schema, laxCoerce(schema, value));
  if (!result.success) return result;
  return { success: true, data: withSmartUnions(schema, value, result.data) as z.output<S> };
}

/**
 * Walks zod's output beside the raw input, redoing the parse of each union whose chosen member is
 * not the one zod took. Only shapes zod's output keeps (objects, arrays, records, tuples, their
 * wrappers) are walked; below a transform, a catch or a readonly the output is zod's own.
 */
function withSmartUnions(schema: z.core.$ZodType, raw: unknown, out: unknown): unknown {
  const def = defOf(schema);
  const inner = def.innerType as z.core.$ZodType;
  switch (def.type) {
    case 'object': {
      if (!isPlainObject(raw) || !isPlainObject(out)) return out;
      const shape = def.shape as Record<string, z.core.$ZodType>;
      const fixed = Object.keys(shape).filter((k) => Object.hasOwn(raw, k) && Object.hasOwn(out, k));
      if (!fixed.length) return out;
      const copy: Record<string, unknown> = { ...out };
      for (const k of fixed) Object.defineProperty(copy, k, { value: withSmartUnions(shape[k], raw[k], out[k]), enumerable: true, writable: true, configurable: true });
      return copy;
    }
    case 'array':
      return Array.isArray(raw) && Array.isArray(out) && raw.length === out.length ? out.map((o, i) => withSmartUnions(def.element as z.core.$ZodType, raw[i], o)) : out;
    case 'tuple': {
      if (!Array.isArray(raw) || !Array.isArray(out) || raw.length !== out.length) return out;
      const items = def.items as z.core.$ZodType[];
      const rest = def.rest as z.core.$ZodType | null;
      return out.map((o, i) => {
        const item = i < items.length ? items[i] : rest;
        return item ? withSmartUnions(item, raw[i], o) : o;
      });
    }
    case 'record':
      if (!isPlainObject(raw) || !isPlainObject(out)) return out;
      return Object.fromEntries(Object.entries(out).map(([k, o]) => [k, Object.hasOwn(raw, k) ? withSmartUnions(def.valueType as z.core.$ZodType, raw[k], o) : o]));
    case 'nullable':
      return raw === null ? out : withSmartUnions(inner, raw, out);
    case 'optional':
    case 'default':
    case 'prefault':
      return raw === undefined ? out : withSmartUnions(inner, raw, out);
    case 'nonoptional':
      return withSmartUnions(inner, raw, out);
    case 'lazy':
      return withSmartUnions((def.getter as () => z.core.$ZodType)(), raw, out);
    case 'union': {
      const options = def.options as z.core.$ZodType[];
      const choice = smartChoice(options, raw);
      if (!choice) return out;
      const member = options[choice.index];
      const zodsPick = options.findIndex((o) => z.safeParse(o, choice.coerced.value).success);
      const parsed = zodsPick === choice.index ? out : z.parse(member, choice.coerced.value);
      return withSmartUnions(member, raw, parsed);
    }
    default:
      return out;
  }
}
