// Okapi BM25 over an inverted index: the retrieval behind the search_tool recipe's `search` tool
// (the reference queries a Chroma vector store with Gemini embeddings, a hosted service; a lexical
// index over a shipped corpus needs neither and ranks the same way on every machine).
//
//   score(D, Q) = Σ_{q ∈ Q} idf(q) · f(q, D) · (k1 + 1) / (f(q, D) + k1 · (1 − b + b · |D| / avgdl))
//   idf(q)      = ln(1 + (N − n(q) + 0.5) / (n(q) + 0.5))
//
// with f(q, D) the term's count in D, n(q) the number of documents holding it and N the corpus
// size. This idf (Lucene's) stays positive for terms in more than half the documents, where the
// original formula turns negative and would rank a document down for matching. A term repeated in
// the query counts once per repetition, as rank_bm25 and Lucene's boolean sum do.

export interface Bm25Options {
  k1?: number;
  b?: number;
}

export interface Bm25Hit {
  /** The document's index in the corpus the index was built from. */
  doc: number;
  score: number;
}

interface Posting {
  doc: number;
  tf: number;
}

/** Lowercased runs of letters and digits (any script). */
export function bm25Tokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

export class Bm25Index {
  readonly k1: number;
  readonly b: number;
  private readonly postings = new Map<string, Posting[]>();
  private readonly docLengths: number[];
  private readonly avgdl: number;

  constructor(documents: readonly string[], opts: Bm25Options = {}) {
    this.k1 = opts.k1 ?? 1.2;
    this.b = opts.b ?? 0.75;
    this.docLengths = documents.map((text, doc) => {
      const counts = new Map<string, number>();
      const tokens = bm25Tokens(text);
      for (const t of tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
      for (const [term, tf] of counts) {
        let list = this.postings.get(term);
        if (!list) this.postings.set(term, (list = []));
        list.push({ doc, tf });
      }
      return tokens.length;
    });
    const total = this.docLengths.reduce((a, n) => a + n, 0);
    this.avgdl = documents.length ? total / documents.length : 0;
  }

  get size(): number {
    return this.docLengths.length;
  }

  /** Documents holding `term` (n(q)). */
  documentFrequency(term: string): number {
    return this.postings.get(term)?.length ?? 0;
  }

  idf(term: string): number {
    const n = this.documentFrequency(term);
    return Math.log(1 + (this.size - n + 0.5) / (n + 0.5));
  }

  /** Every document matching at least one query term, best first; ties go to the earlier document. */
  scores(query: string): Bm25Hit[] {
    const acc = new Map<number, number>();
    for (const term of bm25Tokens(query)) {
      const list = this.postings.get(term);
      if (!list) continue;
      const idf = this.idf(term);
      for (const { doc, tf } of list) {
        const norm = this.k1 * (1 - this.b + (this.b * this.docLengths[doc]) / this.avgdl);
        acc.set(doc, (acc.get(doc) ?? 0) + (idf * tf * (this.k1 + 1)) / (tf + norm));
      }
    }
    return [...acc].map(([doc, score]) => ({ doc, score })).sort((x, y) => y.score - x.score || x.doc - y.doc);
  }

  /** The `k` best documents for `query`. */
  search(query: string, k: number): Bm25Hit[] {
    return this.scores(query).slice(0, k);
  }
}
