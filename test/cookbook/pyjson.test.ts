// Expected strings were produced by CPython 3.11 json.dumps / repr.
import { describe, expect, it } from 'vitest';
import { PyFloat, pyFloat, pyFloatRepr, pyJsonDumps } from '../../src/cookbook/pyjson.js';

describe('pyFloatRepr', () => {
  const cases: Array<[number, string]> = [
    [1, '1.0'],
    [0, '0.0'],
    [-0, '-0.0'],
    [4e-5, '4e-05'],
    [1e-16, '1e-16'],
    [1e16, '1e+16'],
    [1.5e-7, '1.5e-07'],
    [123456789012345678, '1.2345678901234568e+17'],
    [9999999999999998, '9999999999999998.0'],
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [0.1, '0.1'],
    [1 / 3, '0.3333333333333333'],
    [2.5, '2.5'],
    [1e22, '1e+22'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [5e-324, '5e-324'],
    [100, '100.0'],
    [0.1 + 0.2, '0.30000000000000004'],
    [12345.678, '12345.678'],
    [123e-20, '1.23e-18'],
    [0.3333333432674408, '0.3333333432674408'],
    [NaN, 'NaN'],
    [Infinity, 'Infinity'],
    [-Infinity, '-Infinity'],
  ];
  it.each(cases)('%s → %s', (x, s) => expect(pyFloatRepr(x)).toBe(s));
});

describe('pyJsonDumps', () => {
  it('uses Python separators, ensure_ascii escapes, bare NaN/Infinity, exact big ints', () => {
    const v = {
      a: [1, new PyFloat(2), 'é\u2028\x7f\x01', null, true],
      b: {},
      c: [],
      d: NaN,
      e: Infinity,
      f: -Infinity,
      g: 2n ** 70n,
      emoji: '😀',
    };
    expect(pyJsonDumps(v)).toBe(
      '{"a": [1, 2.0, "\\u00e9\\u2028\\u007f\\u0001", null, true], "b": {}, "c": [], "d": NaN, "e": Infinity, "f": -Infinity, "g": 1180591620717411303424, "emoji": "\\ud83d\\ude00"}',
    );
  });

  it('indent matches json.dumps(indent=2)', () => {
    expect(pyJsonDumps({ a: [1, { x: 1.5 }], b: {}, c: [] }, { indent: 2 })).toBe(
      '{\n  "a": [\n    1,\n    {\n      "x": 1.5\n    }\n  ],\n  "b": {},\n  "c": []\n}',
    );
  });

  it('floatKeys marks integral values of those keys as floats', () => {
    const metrics = { step: 3, epoch: 0, num_tokens: 120, learning_rate: 1e-4, progress: 1, train_mean_nll: 2 };
    const floatKeys = new Set(['learning_rate', 'progress', 'train_mean_nll']);
    expect(pyJsonDumps(metrics, { floatKeys })).toBe(
      '{"step": 3, "epoch": 0, "num_tokens": 120, "learning_rate": 0.0001, "progress": 1.0, "train_mean_nll": 2.0}',
    );
    expect(pyJsonDumps({ 'test/nll': 3 }, { floatKeys: (k) => k.endsWith('/nll') })).toBe('{"test/nll": 3.0}');
  });

  it('escapes quotes, backslashes and control characters like Python', () => {
    expect(pyJsonDumps('a"b\\c\n\r\t\b\f')).toBe('"a\\"b\\\\c\\n\\r\\t\\b\\f"');
  });

  it('non-integers are always floats; pyFloat wraps; undefined keys are skipped; sortKeys', () => {
    expect(pyJsonDumps({ z: 0.5, a: pyFloat(3), u: undefined }, { sortKeys: true })).toBe('{"a": 3.0, "z": 0.5}');
  });
});
