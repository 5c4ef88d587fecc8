// The datasets of the shipped environments are JSON Lines files: one row per line, each checked
// against its schema, a bad line refused naming the file and the line.
import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { DataFormatError } from '../../errors.js';

/**
 * The rows of `file` (`shownAs` in errors), each parsed with `schema` and then given to `check`
 * (with its 1-based line number) for what a schema cannot say; an empty file is refused as having no `noun`.
 */
export function readJsonlRows<T>(file: string, shownAs: string, schema: z.ZodType<T>, opts: { noun?: string; check?: (row: T, line: number) => void } = {}): T[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new DataFormatError(`${shownAs}: cannot read (${(err as Error).message})`);
  }
  const rows: T[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      throw new DataFormatError(`${shownAs}:${i + 1}: not JSON (${(err as Error).message})`);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new DataFormatError(`${shownAs}:${i + 1}: ${issue.path.join('.') || '(line)'}: ${issue.message}`);
    }
    opts.check?.(parsed.data, i + 1);
    rows.push(parsed.data);
  });
  if (rows.length === 0) throw new DataFormatError(`${shownAs}: no ${opts.noun ?? 'rows'}`);
  return rows;
}
