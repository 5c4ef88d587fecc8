// syllapy.count (syllapy 0.8.0, MIT): a word's syllables from syllapy's dictionary
// (data/syllapy.csv, as the package ships it; data/NOTICE.md), else by its vowel-group rules.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PUNCTUATION, strip } from './text.js';

let dictionary: Map<string, number> | null = null;
function words(): Map<string, number> {
  if (!dictionary) {
    const text = readFileSync(fileURLToPath(new URL('./data/syllapy.csv', import.meta.url)), 'utf8');
    // Plain "word,count" rows: no field of the shipped file is quoted.
    dictionary = new Map(text.split(/\r?\n/).filter((l) => l).map((l) => [l.slice(0, l.lastIndexOf(',')), Number(l.slice(l.lastIndexOf(',') + 1))]));
  }
  return dictionary;
}

const VOWELS = 'aeiouy';

function byRules(word: string): number {
  const cps = [...word];
  let count = VOWELS.includes(cps[0]!) ? 1 : 0;
  for (let i = 1; i < cps.length; i++) if (VOWELS.includes(cps[i]!) && !VOWELS.includes(cps[i - 1]!)) count++;
  if (word.endsWith('e')) count--;
  if (word.endsWith('le') && cps.length > 2 && !VOWELS.includes(cps[cps.length - 3]!)) count++;
  return count === 0 ? 1 : count;
}

/** syllapy.count(word): 0 for a word that is empty once stripped or holds a digit. */
export function countSyllables(raw: string): number {
  const word = strip(strip(raw).toLowerCase(), PUNCTUATION);
  if (!word || /\p{Nd}/u.test(word)) return 0;
  const known = words().get(word);
  if (known !== undefined) return known;
  const compound = /^([^-]+)-([^\n]+)/u.exec(word);
  if (compound) {
    const [a, b] = [countSyllables(compound[1]!), countSyllables(compound[2]!)];
    return a === 0 || b === 0 ? 0 : a + b;
  }
  return byRules(word);
}
