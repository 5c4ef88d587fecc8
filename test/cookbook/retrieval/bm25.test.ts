// Okapi BM25 against scores worked out by hand (k1 = 1.2, b = 0.75, Lucene's idf).
import { describe, expect, it } from 'vitest';
import { Bm25Index, bm25Tokens } from '../../../src/cookbook/retrieval/bm25.js';

// N = 3 documents of 3, 6 and 3 tokens: avgdl = 4.
const DOCS = ['The cat sat.', 'The dog sat on the mat', 'Cats and dogs'];

describe('BM25', () => {
  it('tokenises into lowercased runs of letters and digits in any script', () => {
    expect(bm25Tokens('Brasília, São-Paulo (42)!')).toEqual(['brasília', 'são', 'paulo', '42']);
    expect(bm25Tokens('  ')).toEqual([]);
  });

  it('idf: ln(1 + (N − n + 0.5) / (n + 0.5))', () => {
    const index = new Bm25Index(DOCS);
    expect(index.documentFrequency('the')).toBe(2);
    expect(index.idf('cat')).toBeCloseTo(0.980829, 6); // ln(1 + 2.5/1.5) = ln(8/3)
    expect(index.idf('the')).toBeCloseTo(0.470004, 6); // ln(1 + 1.5/2.5) = ln(1.6)
    expect(index.idf('absent')).toBeCloseTo(Math.log(1 + 3.5 / 0.5), 12);
  });

  it('one term: idf · tf(k1+1) / (tf + k1(1 − b + b·|D|/avgdl))', () => {
    // doc 0: 0.980829 · 2.2 / (1 + 1.2·(0.25 + 0.75·3/4)) = 0.980829 · 2.2 / 1.975
    expect(new Bm25Index(DOCS).search('cat', 5)).toEqual([{ doc: 0, score: expect.closeTo(1.092569, 5) }]);
  });

  it('several terms add up, repeated terms weigh by tf, longer documents are normalised down', () => {
    const hits = new Bm25Index(DOCS).search('the mat', 5);
    // doc 1 (6 tokens, norm 1.2·(0.25 + 0.75·6/4) = 1.65): "the" twice 0.470004·4.4/3.65 = 0.566580,
    // "mat" once 0.980829·2.2/2.65 = 0.814273; doc 0: "the" once 0.470004·2.2/1.975 = 0.523548.
    expect(hits.map((h) => h.doc)).toEqual([1, 0]);
    expect(hits[0].score).toBeCloseTo(1.380853, 5);
    expect(hits[1].score).toBeCloseTo(0.523548, 5);
    // A query term given twice counts twice.
    expect(new Bm25Index(DOCS).search('mat mat', 1)[0].score).toBeCloseTo(2 * 0.814273, 5);
  });

  it('top k, ties to the earlier document, nothing for unknown terms', () => {
    const index = new Bm25Index(['alpha beta', 'beta alpha', 'gamma']);
    expect(index.search('alpha', 1)).toEqual([{ doc: 0, score: index.search('alpha', 2)[1].score }]);
    expect(index.search('delta', 3)).toEqual([]);
    expect(new Bm25Index([]).search('x', 3)).toEqual([]);
  });
});
