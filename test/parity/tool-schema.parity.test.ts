// The parameters schema a tool declares, beside the reference's @tool (tinker-cookbook 0.6.1, its
// pydantic run at test time by tool_schema_cases.py) for the same Python signature, over a broad set
// of parameter types: the same JSON text, key order included, since the model reads it in its tool
// prompt. Named models and Enum classes are zod schemas given `.meta({ id })` (see json-schema.ts).
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { simpleToolResult, tool } from '../../src/cookbook/tool-use/index.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const Inner = z.object({ n: z.int(), flag: z.boolean().default(false) }).meta({ id: 'Inner' });
const Short = z.object({ a: z.int() }).meta({ id: 'Short' });
const Long = z.object({ a: z.int(), c: z.string() }).meta({ id: 'Long' });
const Cat = z.object({ kind: z.literal('cat'), lives: z.int() }).meta({ id: 'Cat' });
const Dog = z.object({ kind: z.literal('dog'), good: z.boolean() }).meta({ id: 'Dog' });
const Strict = z.strictObject({ a: z.int() }).meta({ id: 'Strict' });
const Doc = z.object({ b: Inner.nullable().default(null), c: z.array(Inner) }).meta({ id: 'Doc', description: 'A documented model.' });
interface TreeValue {
  kids: TreeValue[];
}
// A recursive model: the getter defers the reference to Tree until it is defined.
const Tree: z.ZodType<TreeValue> = z
  .object({
    get kids() {
      return z.array(Tree);
    },
  })
  .meta({ id: 'Tree' });
const Zed = z.object({ z: z.int() }).meta({ id: 'Zed' });
const Color = z.enum(['red', 'green']).meta({ id: 'Color' });
enum NumValues {
  a = 1,
  b = 2,
}
const Num = z.enum(NumValues).meta({ id: 'Num' });
const One = z.enum(['only']).meta({ id: 'One' });

// The zod counterpart of each annotation in tool_schema_cases.py's TYPES.
const CASES: Record<string, z.ZodType> = {
  int: z.int(),
  float: z.number(),
  bool: z.boolean(),
  str: z.string(),
  int_default: z.int().default(5),
  float_default: z.number().default(2.5),
  bool_default: z.boolean().default(true),
  str_default: z.string().default('x'),
  int_desc: z.int().describe('How many'),
  str_desc_default: z.string().default('x').describe('A word'),
  title_desc: z.int().meta({ title: 'Custom', description: 'fd' }),
  examples: z.int().meta({ examples: [1, 2] }),
  int_ge_le: z.int().min(0).max(10),
  int_gt_lt: z.int().gt(0).lt(10),
  int_gt0: z.int().positive(),
  float_ge: z.number().min(0.5),
  float_gt_lt: z.number().gt(0).lt(1),
  int_multiple: z.int().multipleOf(3),
  str_len: z.string().min(1).max(5),
  str_pattern: z.string().regex(/^a+$/),
  int_ge_default: z.int().min(1).default(3),
  opt_int: z.int().nullable().default(null),
  opt_int_required: z.int().nullable(),
  opt_int_default3: z.int().nullable().default(3),
  opt_float: z.number().nullable().default(null),
  opt_bool: z.boolean().nullable().default(null),
  opt_bool_required: z.boolean().nullable(),
  opt_str: z.string().nullable().default(null),
  opt_str_desc: z.string().nullable().default(null).describe('d'),
  opt_inner_desc: z.int().describe('d').nullable().default(null),
  opt_str_len: z.string().min(1).nullable().default(null),
  opt_list: z.array(z.int()).nullable().default(null),
  opt_dict: z.record(z.string(), z.int()).nullable().default(null),
  none: z.null(),
  list_int: z.array(z.int()),
  list_float: z.array(z.number()),
  list_bool: z.array(z.boolean()),
  list_str: z.array(z.string()),
  list_any: z.array(z.any()),
  list_opt_int: z.array(z.int().nullable()),
  list_opt_bool: z.array(z.boolean().nullable()),
  list_default: z.array(z.int()).default([1, 2]),
  list_len: z.array(z.int()).min(1).max(3),
  list_item_ge: z.array(z.int().nonnegative()),
  list_item_desc: z.array(z.int().describe('i')),
  list_list_str: z.array(z.array(z.string())),
  list_title: z.array(z.int()).meta({ title: 'T' }),
  tuple_int_str: z.tuple([z.int(), z.string()]),
  tuple_var: z.array(z.int()), // z.tuple's types want a first item before a rest
  tuple_empty: z.tuple([]),
  dict_int: z.record(z.string(), z.int()),
  dict_float: z.record(z.string(), z.number()),
  dict_bool: z.record(z.string(), z.boolean()),
  dict_str: z.record(z.string(), z.string()),
  dict_any: z.record(z.string(), z.any()),
  dict_list_int: z.record(z.string(), z.array(z.int())),
  dict_opt_int: z.record(z.string(), z.int().nullable()),
  dict_dict: z.record(z.string(), z.record(z.string(), z.int())),
  dict_default: z.record(z.string(), z.int()).default({ b: 1, a: 2 }),
  dict_desc: z.record(z.string(), z.int()).describe('d'),
  dict_lit_keys: z.partialRecord(z.enum(['a', 'b']), z.int()),
  dict_pattern_keys: z.record(z.string().regex(/^x/), z.int()),
  dict_minlen_keys: z.record(z.string().min(2), z.int()),
  model: Inner,
  list_model: z.array(Inner),
  opt_model: Inner.nullable().default(null),
  list_opt_model: z.array(Inner.nullable()),
  model_desc: Inner.describe('d'),
  opt_model_desc: Inner.nullable().default(null).describe('d'),
  model_default: Inner.default({ n: 1, flag: false }),
  dict_model: z.record(z.string(), Inner),
  tuple_model: z.tuple([Inner, z.int()]),
  doc_model: Doc,
  strict_model: Strict,
  recursive_model: Tree,
  enum: Color,
  enum_default: Color.default('red'),
  enum_int: Num,
  enum_one: One,
  opt_enum: Color.nullable().default(null),
  list_enum: z.array(Color),
  lit_str: z.enum(['a', 'b']),
  lit_str_one: z.literal('a'),
  lit_str_default: z.enum(['a', 'b']).default('a'),
  lit_int: z.literal([1, 2]),
  lit_int_one: z.literal(1),
  lit_zero: z.literal(0),
  lit_int_default: z.literal([1, 2]).default(1),
  lit_true: z.literal(true),
  lit_bools: z.literal([true, false]),
  lit_mixed: z.literal([1, 'a']),
  lit_int_bool: z.literal([1, true]),
  lit_none: z.literal(null),
  lit_str_none: z.literal(['a', null]),
  opt_lit: z.enum(['a', 'b']).nullable().default(null),
  list_lit_int: z.array(z.literal([1, 2])),
  union_int_str: z.union([z.int(), z.string()]),
  union_str_int: z.union([z.string(), z.int()]),
  union_int_str_none: z.union([z.int(), z.string()]).nullable().default(null),
  union_none_first: z.union([z.null(), z.int()]),
  union_bool_int: z.union([z.boolean(), z.int()]),
  union_str_lit: z.union([z.string(), z.literal(1)]),
  union_dup: z.union([z.int(), z.int().nonnegative()]),
  union_list_int: z.union([z.array(z.int()), z.int()]),
  union_model_int: z.union([Inner, z.int()]),
  union_models: z.union([Short, Long]),
  opt_union_models: z.union([Short, Long, z.null()]).default(null),
  union_default: z.union([z.int(), z.string()]).default(1),
  disc: z.discriminatedUnion('kind', [Cat, Dog]),
  any: z.any(),
};

const run = () => simpleToolResult('');
const TOOLS = [
  ...Object.entries(CASES).map(([name, schema]) => tool({ name: `t_${name}`, parameters: z.object({ v: schema }), run })),
  tool({
    name: 'several',
    parameters: z.object({ b: Zed, a: Inner, c: z.array(Inner), max_results: z.int().default(5), x2y_id: z.string().nullable().default(null) }),
    run,
  }),
  tool({ name: 'nothing', parameters: z.object({}), run }),
];

let reference: Record<string, unknown>;

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'tool_schema_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1' } });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);

describe("declared parameter schemas beside the reference's @tool", () => {
  it(`${TOOLS.length} signatures: the same JSON text, key order included`, () => {
    expect(Object.keys(reference)).toEqual(TOOLS.map((t) => t.name));
    const mismatches = TOOLS.flatMap((t) => {
      const [ours, theirs] = [JSON.stringify(t.toSpec().parameters), JSON.stringify(reference[t.name])];
      return ours === theirs ? [] : [`${t.name}:\n  reference ${theirs}\n  ours      ${ours}`];
    });
    expect(mismatches).toEqual([]);
  });
});
