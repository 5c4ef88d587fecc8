// Tool arguments converted as pydantic's lax mode converts them, beside the reference's @tool
// (tinker-cookbook 0.6.1, run at test time by tool_use_lax_cases.py with the installed pydantic):
// for each (declared type, argument) case, both accept with the same value reaching the function,
// or both refuse with `validation_failed` (and, outside unions, the same count and field in the
// message's first lines). The few conversions lax.ts does not mirror are pinned as such.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { handleToolCall, simpleToolResult, tool, type Tool } from '../../src/cookbook/tool-use/index.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

// Python classes are zod schemas named with .meta({ id }): declared, as pydantic declares them, under $defs.
const inner = z.object({ n: z.int(), flag: z.boolean().default(false) }).meta({ id: 'Inner' });
// The zod counterpart of each annotation in tool_use_lax_cases.py's TYPES.
const TYPES: Record<string, z.ZodType> = {
  int: z.int(),
  float: z.number(),
  bool: z.boolean(),
  str: z.string(),
  int_default: z.int().default(5),
  int_ge0: z.int().min(0),
  list_int: z.array(z.int()),
  list_float: z.array(z.number()),
  list_opt_int: z.array(z.int().nullable()),
  dict_int: z.record(z.string(), z.int()),
  tuple_int_str: z.tuple([z.int(), z.string()]),
  model: inner,
  list_model: z.array(inner),
  opt_int: z.int().nullable().default(null),
  opt_int_required: z.int().nullable(),
  opt_bool: z.boolean().nullable().default(null),
  lit_str: z.enum(['a', 'b']),
  lit_int: z.literal([1, 2]),
  lit_true: z.literal(true),
  lit_zero: z.literal(0),
  enum_str: z.enum(['red', 'green']).meta({ id: 'Color' }),
  union_int_str: z.union([z.int(), z.string()]),
  union_str_int: z.union([z.string(), z.int()]),
  union_bool_int: z.union([z.boolean(), z.int()]),
  union_int_bool: z.union([z.int(), z.boolean()]),
  union_float_int: z.union([z.number(), z.int()]),
  union_models: z.union([z.object({ a: z.int() }).meta({ id: 'Short' }), z.object({ a: z.int(), c: z.string() }).meta({ id: 'Long' })]),
  union_list_int: z.union([z.array(z.int()), z.int()]),
};
// Every type is declared as in the reference (json-schema.ts; its broader table is tool-schema.parity.test.ts).
const SPEC_DIFFERS: string[] = [];

/** [type, the JSON text of `v` (undefined: left out)]. */
type Case = [keyof typeof TYPES & string, string | undefined];
const CASES: Case[] = [
  // int: int-like strings (trimmed, signed, padded, grouped, with an all-zero fraction), integral
  // floats, bools; not fractions, exponents, other bases, other digits, nor null or containers.
  ...(['"2"', '" 2 "', '"\\t2\\n"', '"+2"', '"-2"', '"-0"', '"2.0"', '"2.00"', '"2."', '"2.5"', '"1_000"', '"1_000.0"', '"_1"', '"1__0"', '"00012"', '"0__1"', '"1e3"', '"0x10"', '""', '" "', '"+-2"', '"\\u00a02"', '"\\u20032"', '"\\ufeff2"', '"\\u001c2"', '"\\uff12"', '"abc"', '2.0', '2.5', '-0.0', '1e2', 'true', 'false', 'null', '[1]', '{}'] as const).map((v): Case => ['int', v]),
  // float: Rust's float syntax (with `_` grouping), ints, bools; not commas, hex, whitespace inside.
  ...(['"1.5"', '" 1.5 "', '"+1.5"', '"1e3"', '"1E-2"', '".5"', '"5."', '"1_000.5"', '"1_.5"', '" 1_0"', '"1,5"', '"0x1p3"', '"1.5f"', '"."', '"-0"', '""', '"abc"', '2', '-0.0', 'true', 'null', '"1e"'] as const).map((v): Case => ['float', v]),
  // bool: 0/1 (also 0.0, 1.0) and pydantic's words in any ASCII case, untrimmed.
  ...(['"yes"', '"YES"', '"y"', '"on"', '"off"', '"t"', '"F"', '"True"', '"false"', '"no"', '"1"', '"0"', '" true"', '"true "', '"2"', '"tru"', '"null"', '"1.0"', '1', '0', '1.0', '-0.0', '2', '0.5', 'null', '[]'] as const).map((v): Case => ['bool', v]),
  // str: nothing else converts to a string.
  ...(['" a "', '1', '1.5', 'true', 'null', '[]', '{}'] as const).map((v): Case => ['str', v]),
  ['int_default', undefined], ['int_default', '"7"'], ['int_default', 'null'],
  ['int_ge0', '"3"'], ['int_ge0', '"-1"'], ['int_ge0', 'true'],
  ['list_int', '["1", 2.0, true, " 4 "]'], ['list_int', '["1", "x"]'], ['list_int', '"12"'], ['list_int', '{"0": 1}'], ['list_int', '[]'],
  ['list_float', '["1.5", 2, false, "3_0"]'], ['list_float', '[1, "x"]'],
  ['list_opt_int', '[null, "1", 2]'], ['list_opt_int', '[null, "x"]'],
  ['dict_int', '{"a": "1", "b": true, "c": 3.0}'], ['dict_int', '{"a": "x"}'], ['dict_int', '[["a", 1]]'], ['dict_int', '{"a": null}'],
  ['tuple_int_str', '["1", "x"]'], ['tuple_int_str', '["1"]'], ['tuple_int_str', '["1", "x", "y"]'], ['tuple_int_str', '["x", "y"]'], ['tuple_int_str', '"ab"'],
  ['model', '{"n": "3", "flag": "on"}'], ['model', '{"n": 3.0, "extra": 1}'], ['model', '{"n": "x"}'], ['model', '{"n": "1", "flag": null}'], ['model', '"x"'], ['model', '{}'],
  ['list_model', '[{"n": "1"}, {"n": 2, "flag": 1}]'], ['list_model', '[{"n": "1"}, {"n": "z"}]'],
  ['opt_int', undefined], ['opt_int', 'null'], ['opt_int', '"2"'], ['opt_int', '""'], ['opt_int', '"none"'],
  ['opt_int_required', 'null'], ['opt_int_required', '"7"'], ['opt_int_required', undefined],
  ['opt_bool', '"off"'], ['opt_bool', 'null'], ['opt_bool', '"null"'],
  ['lit_str', '"a"'], ['lit_str', '"A"'], ['lit_str', '" a"'], ['lit_str', '1'], ['lit_str', 'null'],
  ['lit_int', '1'], ['lit_int', '1.0'], ['lit_int', 'true'], ['lit_int', '"1"'], ['lit_int', '3'], ['lit_int', 'false'],
  ['lit_true', 'true'], ['lit_true', '1'], ['lit_true', '1.0'], ['lit_true', '"true"'], ['lit_true', '"1"'], ['lit_true', 'false'],
  ['lit_zero', '-0.0'], ['lit_zero', 'false'], ['lit_zero', '"0"'],
  ['enum_str', '"red"'], ['enum_str', '"RED"'], ['enum_str', '0'],
  ['union_int_str', '"2"'], ['union_int_str', '2'], ['union_int_str', 'true'], ['union_int_str', '2.5'], ['union_int_str', 'null'],
  ['union_str_int', '"2"'], ['union_str_int', 'true'], ['union_str_int', '2'],
  ['union_bool_int', '"1"'], ['union_bool_int', '1'], ['union_bool_int', '"yes"'], ['union_bool_int', '2'], ['union_bool_int', 'true'],
  ['union_int_bool', '"1"'], ['union_int_bool', 'true'], ['union_int_bool', '"true"'],
  ['union_float_int', '"2"'], ['union_float_int', '"2.5"'], ['union_float_int', '2'], ['union_float_int', 'true'],
  ['union_models', '{"a": "1", "c": "x"}'], ['union_models', '{"a": "1"}'], ['union_models', '{"a": "1", "c": 5}'], ['union_models', '{"c": "x"}'],
  ['union_list_int', '["1"]'], ['union_list_int', '"1"'], ['union_list_int', '["x"]'],
];
// What pydantic takes and a JS number cannot carry (see lax.ts): pinned as refused here.
const NOT_MIRRORED: Case[] = [
  ['float', '"inf"'], ['float', '"-Infinity"'], ['float', '"nan"'], ['float', '"1e400"'],
  ['int', '"12345678901234567890"'], ['int', '12345678901234567890'], ['int', '9007199254740993.0'],
];

const argumentsText = (v: string | undefined) => (v === undefined ? '{}' : `{"v": ${v}}`);
const TOOLS = new Map<string, Tool>(
  Object.entries(TYPES).map(([name, schema]) => {
    const t = tool({ name: `t_${name}`, parameters: z.object({ v: schema }), run: ({ v }) => simpleToolResult(JSON.stringify(v)) });
    return [t.name, t];
  }),
);

type Outcome = { ok: unknown } | { error: string; message: string };
async function ours(type: string, v: string | undefined): Promise<Outcome> {
  const r = await handleToolCall(TOOLS, { type: 'function', id: 'c', function: { name: `t_${type}`, arguments: argumentsText(v) } });
  const content = r.messages[0].content as string;
  return r.metadata.error ? { error: r.metadata.error as string, message: JSON.parse(content).error } : { ok: JSON.parse(content) };
}

let reference: { specs: Record<string, unknown>; results: Outcome[] };
const ALL = [...CASES, ...NOT_MIRRORED];

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify(ALL.map(([type, v]) => [`t_${type}`, argumentsText(v)]));
  const child = await runPythonScript(python, [join(import.meta.dirname, 'tool_use_lax_cases.py')], { input, env: { ...process.env, HF_HUB_OFFLINE: '1' } });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);

/** `Parameter validation failed: N validation error(s) for X_params` and the field line after it. */
const header = (message: string) => message.split('\n').slice(0, 2);
/**
 * Refusals whose first lines differ by wording (zod's, not pydantic's): pydantic lists one error per
 * union member where zod has one for the union, and puts a short tuple's error at the missing item.
 */
const sameWording = (type: string, v: string | undefined) => !type.startsWith('union_') && !(type === 'tuple_int_str' && v === '["1"]');

describe("tool arguments beside the reference's lax validation", () => {
  it('each type declares the same parameters schema as its Python annotation', () => {
    const differ = Object.keys(TYPES).filter((n) => JSON.stringify(TOOLS.get(`t_${n}`)!.toSpec()) !== JSON.stringify(reference.specs[`t_${n}`]));
    expect(differ).toEqual(SPEC_DIFFERS);
  });

  it(`${CASES.length} cases: the same value reaches the function, or both refuse`, async () => {
    expect(CASES.length).toBeGreaterThanOrEqual(60);
    const mismatches: string[] = [];
    for (const [i, [type, v]] of CASES.entries()) {
      const ts = await ours(type, v);
      const ref = reference.results[i];
      const where = `${type} ${argumentsText(v)}`;
      if ('ok' in ref) {
        if (!('ok' in ts) || !Object.is(JSON.stringify(ts.ok), JSON.stringify(ref.ok))) mismatches.push(`${where}: reference ${JSON.stringify(ref)}, ours ${JSON.stringify(ts)}`);
      } else if (!('error' in ts) || ts.error !== ref.error) {
        mismatches.push(`${where}: reference refused (${ref.error}), ours ${JSON.stringify(ts)}`);
      } else if (sameWording(type, v) && JSON.stringify(header(ts.message)) !== JSON.stringify(header(ref.message))) {
        mismatches.push(`${where}: reference says ${JSON.stringify(header(ref.message))}, ours ${JSON.stringify(header(ts.message))}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('what is not mirrored: pydantic takes non-finite floats and ints past 2^53, here they are refused', async () => {
    for (const [j, [type, v]] of NOT_MIRRORED.entries()) {
      const ref = reference.results[CASES.length + j];
      expect('ok' in ref, `${type} ${v}`).toBe(true);
      expect(await ours(type, v), `${type} ${v}`).toMatchObject({ error: 'validation_failed' });
    }
  });
});
