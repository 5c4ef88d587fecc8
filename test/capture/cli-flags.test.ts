// `cookbook capture` flags (src/capture/cli.ts): sizes, times, and filters as the query string the
// daemon reads back (src/capture/store/query.ts), so the CLI and the daemon cannot disagree.
import { describe, expect, it } from 'vitest';
import { parseSize, parseTime, rowFilterFromFlags } from '../../src/capture/cli.js';
import { paramsToRowFilter, rowFilterToParams } from '../../src/capture/store/query.js';

describe('capture CLI flags', () => {
  it('reads sizes and times, and refuses what is neither', () => {
    expect([parseSize('500000'), parseSize('500MB'), parseSize('2GiB'), parseSize('1.5 kb')]).toEqual([500_000, 500_000_000, 2 * 1024 ** 3, 1500]);
    expect(() => parseSize('lots')).toThrow('--max-bytes: "lots" is not a size');
    expect(parseTime('--since', '1790000000.5')).toBe(1_790_000_000.5);
    expect(parseTime('--since', '2026-11-29T18:00:00Z')).toBe(Date.UTC(2026, 10, 29, 18) / 1000);
    expect(parseTime('--since', '2h', 10_000)).toBe(10_000 - 7200);
    expect(parseTime('--since', '7d', 1_000_000)).toBe(1_000_000 - 7 * 86_400);
    expect(() => parseTime('--until', 'yesterday')).toThrow('--until: "yesterday" is neither');
  });

  it('turns flags into the filter the daemon reads back from the query string', () => {
    const filter = rowFilterFromFlags({ 'run-id': 'r', iteration: '3..7', group: '2', since: '1790000000', meta: ['labels.quality=3'], has: ['reward'], 'tool-use': true, label: 'good' });
    expect(filter).toEqual({ run_id: 'r', iteration_min: 3, iteration_max: 7, group_idx: 2, since: 1_790_000_000, meta: { 'labels.quality': '3', tool_use: 'true', label: 'good' }, has: ['reward'] });
    expect(paramsToRowFilter(rowFilterToParams(filter, { cursor: 5, limit: 10 }))).toEqual({ filter, page: { cursor: 5, limit: 10 } });
    expect(rowFilterFromFlags({ iteration: '..4' })).toEqual({ iteration_max: 4 });
    expect(rowFilterFromFlags({ iteration: '4' })).toEqual({ iteration: 4 });
    expect(() => rowFilterFromFlags({ meta: ['novalue'] })).toThrow('--meta: "novalue" is not path=value');
    expect(() => rowFilterFromFlags({ has: ['bad path!'] })).toThrow(/metadata path "bad path!"/);
    expect(() => paramsToRowFilter(new URLSearchParams('colour=blue'))).toThrow('unknown filter "colour"');
    expect(() => paramsToRowFilter(new URLSearchParams('limit=-1'))).toThrow('limit must be a positive integer, got "-1"');
  });
});
