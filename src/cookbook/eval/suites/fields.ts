// Row field access with errors that name the row and the field.
import { DataFormatError } from '../../errors.js';

export function stringField(row: Record<string, unknown>, key: string, at: string): string {
  const v = row[key];
  if (typeof v !== 'string' || v.trim() === '') throw new DataFormatError(`${at}: "${key}" must be a non-empty string`);
  return v;
}

export function arrayField(row: Record<string, unknown>, key: string, at: string): unknown[] {
  const v = row[key];
  if (!Array.isArray(v)) throw new DataFormatError(`${at}: "${key}" must be a list`);
  return v;
}

/** Python's `row.get(key, default)`: a key present with null is null. */
export const pyGet = (row: Record<string, unknown>, key: string, fallback: unknown): unknown => (key in row ? row[key] : fallback);
