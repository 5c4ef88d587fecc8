// emoji.is_emoji (emoji 2.16.0, BSD-3-Clause) for one character: whether it is a key of the
// package's EMOJI_DATA. IFBench only asks it of single characters, so data/emoji.json holds the
// keys of one code point (data/NOTICE.md; test/fixtures/ifbench_gen_data.py writes it).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

let singles: Set<string> | null = null;

/** emoji.is_emoji(ch) for a string of one code point. */
export function isEmojiChar(ch: string): boolean {
  singles ??= new Set((JSON.parse(readFileSync(fileURLToPath(new URL('./data/emoji.json', import.meta.url)), 'utf8')) as { emoji: string[] }).emoji);
  return singles.has(ch);
}
