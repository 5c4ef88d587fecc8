// Python's str.casefold() (full case folding), which the reference applies to a category to make a
// logging tag. Per code point, lower(upper(c)) gives the full folding (ß → ss, ﬁ → fi, ſ → s, final
// σ kept σ) except for Cherokee, whose letters fold to their uppercase forms.
const CHEROKEE = /[\u13a0-\u13f5\u13f8-\u13fd\uab70-\uabbf]/u;

export function casefold(s: string): string {
  let out = '';
  for (const c of s) out += CHEROKEE.test(c) ? c.toUpperCase() : c.toUpperCase().toLowerCase();
  return out;
}
