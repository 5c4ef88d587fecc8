// Reading JSONL files one JSON value per line, with errors that name the file and the line
// (`file:line`). Shared by the conversation, comparison, prompt and GSM8K loaders.

import { readFile } from 'node:fs/promises';
import { DataFormatError } from './errors.js';

export interface ParseJsonlOptions {
  /** The DataFormatError message (verbatim) when no row was read; without it, no rows is not an error. */
  emptyMessage?: string;
  /**
   * Parse the trimmed line rather than the line as it is (default true). Only blank-line skipping
   * and JSON.parse's error text (its positions, a leading BOM) depend on it.
   */
  trimLines?: boolean;
}

/** One JSONL line as JSON; `at` ("file:line") prefixes the DataFormatError for invalid JSON. */
export function parseJsonLine(line: string, at: string): unknown {
  try {
    return JSON.parse(line);
  } catch (e) {
    throw new DataFormatError(`${at}: invalid JSON (${(e as Error).message})`);
  }
}

/**
 * Parse JSONL text: blank lines are skipped, every other line is parsed as JSON and handed to
 * `parseRow` with its `file:line` label and 1-based line number. Invalid JSON is a
 * DataFormatError `file:line: invalid JSON (…)`.
 */
export function parseJsonlRows<T>(
  text: string,
  displayPath: string,
  parseRow: (data: unknown, at: string, line: number) => T,
  options: ParseJsonlOptions = {},
): T[] {
  const { emptyMessage, trimLines = true } = options;
  const rows: T[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const trimmed = lines[i].trim();
    if (trimmed === '') continue;
    const at = `${displayPath}:${i + 1}`;
    rows.push(parseRow(parseJsonLine(trimLines ? trimmed : lines[i], at), at, i + 1));
  }
  if (rows.length === 0 && emptyMessage !== undefined) throw new DataFormatError(emptyMessage);
  return rows;
}

/**
 * Read a UTF-8 text file. By default a missing file is a DataFormatError `${displayPath}: no such
 * file` and any other error is rethrown; with `readErrorMessage`, every read error becomes a
 * DataFormatError with that message.
 */
export async function readTextFile(
  filePath: string,
  displayPath: string,
  readErrorMessage?: (err: Error) => string,
): Promise<string> {
  try {
    return await readFile(filePath, 'utf8');
  } catch (e) {
    if (readErrorMessage) throw new DataFormatError(readErrorMessage(e as Error));
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new DataFormatError(`${displayPath}: no such file`);
    throw e;
  }
}
