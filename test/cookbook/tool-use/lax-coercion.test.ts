// Tool arguments converted as pydantic v2's lax mode converts them (the reference's @tool runs
// model_validate in lax mode): the converted value reaches the function, what pydantic refuses is
// refused with zod's usual message, and the declared schema does not change. Expected values are
// pydantic 2.14's (pydantic-core 2.50) answers; test/parity/tool-use-lax.parity.test.ts checks a
// table of cases against the installed reference itself.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { handleToolCall, simpleToolResult, tool, type Tool } from '../../../src/cookbook/tool-use/index.js';
import { laxCoerce, laxSafeParse, pyStrAsFloat, pyStrAsInt } from '../../../src/cookbook/tool-use/lax.js';

const ok = (schema: z.ZodType, value: unknown) => {
  const r = laxSafeParse(schema, value);
  if (!r.success) throw new Error(`refused ${JSON.stringify(value)}: ${r.error.message}`);
  return r.data;
};
const refused = (schema: z.ZodType, value: unknown) => !laxSafeParse(schema, value).success;

describe('strings as numbers, as pydantic-core parses them', () => {
  it('int: trimmed (Unicode White_Space), one sign, leading zeros, an all-zero fraction, `_` grouping', () => {
    const accepted: Array<[string, bigint]> = [
      ['2', 2n], [' 2 ', 2n], ['\t2\n', 2n], ['\u00a02', 2n], ['\u30002', 2n], ['\u00852', 2n], ['+2', 2n], ['-2', -2n], ['-0', 0n],
      ['2.0', 2n], ['2.00', 2n], ['00012', 12n], ['-01', -1n], ['000.000', 0n], ['1_000', 1000n], ['1_000.0', 1000n], ['00_1', 1n],
      ['0__1', 1n], ['12345678901234567890', 12345678901234567890n],
    ];
    for (const [s, n] of accepted) expect(pyStrAsInt(s), JSON.stringify(s)).toBe(n);
    // Not: an empty fraction, a fraction, exponents, other bases or digits, misplaced `_`, two
    // signs, U+FEFF (JS's trim would take it), \x1c (Python's strip would).
    for (const s of ['2.', '.0', '2.5', '1.0_0', '1e3', '0x10', '0b1', '\uff12', '\u0662', '_1', '1_', '1__0', '+-2', '++2', '-_1', '', ' ', '2 0', '\ufeff2', '\u001c2', 'abc']) {
      expect(pyStrAsInt(s), JSON.stringify(s)).toBeUndefined();
    }
  });

  it("float: Rust's float syntax after trimming, inf/nan in any case, `_` grouping on the untrimmed string", () => {
    const accepted: Array<[string, number]> = [
      ['1.5', 1.5], [' 1.5 ', 1.5], ['+1.5', 1.5], ['1e3', 1000], ['1E-2', 0.01], ['.5', 0.5], ['5.', 5], ['-0', -0], ['1_000.5', 1000.5],
      ['1_.5', 1.5], ['1_0e1_0', 1e11], ['iNf', Infinity], ['-Infinity', -Infinity], ['1e400', Infinity],
    ];
    for (const [s, n] of accepted) expect(pyStrAsFloat(s), JSON.stringify(s)).toBe(n);
    expect(pyStrAsFloat('nan')).toBeNaN();
    for (const s of [' 1_0', '1,5', '0x1p3', '1.5f', '.', '1e', '+-1', 'infinit', '', '\ufeff1.5']) expect(pyStrAsFloat(s), JSON.stringify(s)).toBeUndefined();
  });
});

describe('scalars', () => {
  it('int takes int-like strings, integral numbers and bools; −0 arrives as 0', () => {
    expect([' 7 ', '+7', '7.0', '1_000', 7, true, false].map((v) => ok(z.int(), v))).toEqual([7, 7, 7, 1000, 7, 1, 0]);
    expect(Object.is(ok(z.int(), -0), 0)).toBe(true);
    expect(Object.is(ok(z.int(), '-0'), 0)).toBe(true);
    for (const v of ['7.5', 7.5, '1e3', '', null, [7], {}]) expect(refused(z.int(), v), JSON.stringify(v)).toBe(true);
  });

  it('float takes float-like strings, numbers and bools, keeping −0', () => {
    expect(['1.5', ' .5', '1e3', 2, true].map((v) => ok(z.number(), v))).toEqual([1.5, 0.5, 1000, 2, 1]);
    expect(Object.is(ok(z.number(), '-0'), -0)).toBe(true);
    for (const v of ['1,5', 'abc', null]) expect(refused(z.number(), v), JSON.stringify(v)).toBe(true);
  });

  it('bool takes 0/1 (and 0.0/1.0) and its words in any ASCII case, untrimmed', () => {
    expect(['yes', 'YES', 'On', 't', 'Y', '1', 'true', 'no', 'OFF', 'f', 'n', '0', 'False', 1, 0, -0].map((v) => ok(z.boolean(), v))).toEqual([
      true, true, true, true, true, true, true, false, false, false, false, false, false, true, false, false,
    ]);
    for (const v of [' true', 'true ', '2', '1.0', 'tru', 'null', 2, 0.5, null]) expect(refused(z.boolean(), v), JSON.stringify(v)).toBe(true);
  });

  it('str takes nothing else: numbers, bools and null stay refused', () => {
    expect(ok(z.string(), ' a ')).toBe(' a ');
    for (const v of [1, 1.5, true, null]) expect(refused(z.string(), v)).toBe(true);
  });

  it('literals and enums match by Python equality: 1 is True, never "1"; the declared value arrives', () => {
    expect(ok(z.literal([1, 2]), true)).toBe(1);
    expect(ok(z.literal(true), 1)).toBe(true);
    expect(ok(z.literal(false), 0)).toBe(false);
    expect(Object.is(ok(z.literal(0), -0), 0)).toBe(true);
    expect(ok(z.literal(0), false)).toBe(0);
    expect(ok(z.enum(['a', 'b']), 'a')).toBe('a');
    for (const [s, v] of [[z.literal([1, 2]), '1'], [z.literal(true), 'true'], [z.enum(['a', 'b']), 'A'], [z.enum(['a', 'b']), ' a']] as const) {
      expect(refused(s, v), JSON.stringify(v)).toBe(true);
    }
  });

  it('not mirrored: non-finite floats and ints past 2^53, which a JS number cannot carry', () => {
    for (const v of ['inf', 'nan', '1e400']) expect(refused(z.number(), v), v).toBe(true);
    expect(laxSafeParse(z.int(), '12345678901234567890').error?.issues[0].message).toBe('Too big: expected int to be <=9007199254740991');
  });
});

describe('containers and wrappers convert element-wise', () => {
  const inner = z.object({ n: z.int(), flag: z.boolean().default(false) });

  it('lists, dicts, tuples, nested objects, Optional, defaults', () => {
    expect(ok(z.array(z.int()), ['1', 2.0, true])).toEqual([1, 2, 1]);
    expect(ok(z.record(z.string(), z.number()), { a: '1.5', b: false })).toEqual({ a: 1.5, b: 0 });
    expect(ok(z.tuple([z.int(), z.string()]), ['1', 'x'])).toEqual([1, 'x']);
    expect(ok(z.array(inner), [{ n: '1' }, { n: 2, flag: 'on', extra: 1 }])).toEqual([{ n: 1, flag: false }, { n: 2, flag: true }]);
    expect(ok(z.int().nullable(), null)).toBeNull();
    expect(ok(z.int().nullable().default(null), '3')).toBe(3);
    expect(ok(z.object({ v: z.int().default(5) }), {})).toEqual({ v: 5 });
    expect(ok(z.object({ v: z.int().optional() }), { v: '4' })).toEqual({ v: 4 });
    // Not containers pydantic would not take: a string is not a list, a list not a dict.
    expect(refused(z.array(z.int()), '12')).toBe(true);
    expect(refused(z.record(z.string(), z.int()), [['a', 1]])).toBe(true);
    // A null for a field with a non-None default is refused (pydantic does not validate defaults, nor take None for them).
    expect(refused(z.object({ v: z.int().default(5) }), { v: null })).toBe(true);
  });

  it('checks run on the converted value, as pydantic constraints do', () => {
    expect(ok(z.int().min(0), '3')).toBe(3);
    expect(laxSafeParse(z.int().min(0), '-1').error?.issues[0].code).toBe('too_small');
  });

  it('a refused element leaves the rest converted and only itself reported', () => {
    const r = laxSafeParse(z.object({ l: z.array(z.int()), b: z.boolean() }), { l: ['1', 'x'], b: 'yes' });
    expect(r.error?.issues.map((i) => [i.path, i.code])).toEqual([[['l', 1], 'invalid_type']]);
  });

  it('a `__proto__` argument stays an own key, never the prototype', () => {
    const args = JSON.parse('{"__proto__": {"polluted": 1}, "n": "1"}');
    const out = laxCoerce(z.looseObject({ n: z.int() }), args) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(out.n).toBe(1);
  });
});

describe("unions: pydantic's smart mode", () => {
  it('an exact match beats a conversion; among conversions, the first member', () => {
    expect(ok(z.union([z.int(), z.string()]), '2')).toBe('2');
    expect(ok(z.union([z.string(), z.int()]), true)).toBe(1);
    expect(ok(z.union([z.boolean(), z.int()]), 1)).toBe(1);
    expect(ok(z.union([z.boolean(), z.int()]), '1')).toBe(true);
    expect(ok(z.union([z.int(), z.boolean()]), '1')).toBe(1);
    expect(ok(z.union([z.array(z.int()), z.int()]), '1')).toBe(1);
  });

  it('of two objects, the one the arguments set more fields of, though zod alone would take the first', () => {
    const u = z.union([z.object({ a: z.int() }), z.object({ a: z.int(), c: z.string() })]);
    expect(u.parse({ a: 1, c: 'x' })).toEqual({ a: 1 });
    expect(ok(u, { a: '1', c: 'x' })).toEqual({ a: 1, c: 'x' });
    expect(ok(u, { a: '1' })).toEqual({ a: 1 });
    expect(ok(z.object({ v: z.array(u) }), { v: [{ a: 1, c: 'y' }] })).toEqual({ v: [{ a: 1, c: 'y' }] });
  });
});

describe('through a tool', () => {
  const calls: unknown[] = [];
  const fetchPage = tool({
    name: 'fetch_page',
    parameters: z.object({ page: z.int().describe('Page number'), limit: z.int().default(10), verbose: z.boolean().default(false), scale: z.number().default(1) }),
    run: (args) => {
      calls.push(args);
      return simpleToolResult('ok');
    },
  });
  const tools = new Map<string, Tool>([[fetchPage.name, fetchPage]]);
  const call = (args: string) => handleToolCall(tools, { type: 'function', id: 'c1', function: { name: 'fetch_page', arguments: args } });

  it('the function gets the converted values; the declared schema is unchanged', async () => {
    const r = await call('{"page": "2", "limit": 2.0, "verbose": "yes", "scale": "0.5"}');
    expect(r.metadata).toEqual({});
    expect(calls.at(-1)).toEqual({ page: 2, limit: 2, verbose: true, scale: 0.5 });
    expect(fetchPage.toSpec().parameters).toEqual({
      properties: {
        page: { description: 'Page number', title: 'Page', type: 'integer' },
        limit: { default: 10, title: 'Limit', type: 'integer' },
        verbose: { default: false, title: 'Verbose', type: 'boolean' },
        scale: { default: 1, title: 'Scale', type: 'number' },
      },
      required: ['page'],
      title: 'fetch_page_params',
      type: 'object',
    });
  });

  it('what pydantic refuses keeps the validation message', async () => {
    const r = await call('{"page": "2.5"}');
    expect(r.metadata).toEqual({ error: 'validation_failed' });
    expect(JSON.parse(r.messages[0].content as string).error).toBe(
      'Parameter validation failed: 1 validation error for fetch_page_params\npage\n  Invalid input: expected number, received string [code=invalid_type]',
    );
  });
});
