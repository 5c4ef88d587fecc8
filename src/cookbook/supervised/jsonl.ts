// Loading chat conversations from JSONL (`{"messages": [...]}` per line), with errors that name
// the file and the line.

import path from 'node:path';
import { DataFormatError } from '../errors.js';
import { parseJsonlRows, readTextFile } from '../jsonl.js';
import type { ContentPart, Message } from '../renderers/types.js';
import { tokenRecordOf, type TokenRecord } from './token-record.js';

export const MESSAGE_ROLES = ['system', 'user', 'assistant', 'tool'] as const;

export interface ConversationRow {
  messages: Message[];
  /** 1-based line number in the source file, for error messages (for an `hf` source: the row's position). */
  line: number;
  /** Where the row came from when that is not `file:line` (an `hf` source's "file row N"). */
  at?: string;
  /** The exact tokens to train on, when the row gives them (token-record.ts). */
  record?: TokenRecord;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)}`;
}

function validateContent(content: unknown, where: string): void {
  if (typeof content === 'string') return;
  if (!Array.isArray(content)) throw new DataFormatError(`${where} "content" must be a string or a list of parts, got ${describe(content)}`);
  content.forEach((p: unknown, k) => {
    const part = p as Partial<ContentPart> | null;
    if (part === null || typeof part !== 'object') throw new DataFormatError(`${where} content part ${k} is not an object`);
    if (part.type === 'text' && typeof (part as { text?: unknown }).text === 'string') return;
    if (part.type === 'thinking' && typeof (part as { thinking?: unknown }).thinking === 'string') return;
    if (part.type === 'image' && typeof (part as { image?: unknown }).image === 'string' && (part as { image: string }).image) return;
    throw new DataFormatError(
      `${where} content part ${k} must be {"type": "text", "text": …}, {"type": "thinking", "thinking": …} ` +
        'or {"type": "image", "image": "<path relative to the file, file:// or data: URL>"}',
    );
  });
}

/** Validate one parsed JSONL row; `at` is "file:line". */
export function validateConversation(data: unknown, at: string): Message[] {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new DataFormatError(`${at}: expected a JSON object with "messages", got ${describe(data)}`);
  }
  const obj = data as Record<string, unknown>;
  if (!('messages' in obj)) {
    throw new DataFormatError(`${at}: missing "messages" (keys: ${Object.keys(obj).join(', ') || 'none'})`);
  }
  const messages = obj.messages;
  if (!Array.isArray(messages)) throw new DataFormatError(`${at}: "messages" must be a list, got ${describe(messages)}`);
  if (messages.length === 0) throw new DataFormatError(`${at}: "messages" is empty`);
  messages.forEach((m: unknown, i) => {
    const where = `${at}: message ${i}`;
    if (m === null || typeof m !== 'object' || Array.isArray(m)) throw new DataFormatError(`${where} is not an object`);
    const msg = m as Record<string, unknown>;
    if (!('role' in msg)) throw new DataFormatError(`${where} has no "role"`);
    if (!('content' in msg)) throw new DataFormatError(`${where} has no "content"`);
    if (typeof msg.role !== 'string' || !(MESSAGE_ROLES as readonly string[]).includes(msg.role)) {
      throw new DataFormatError(`${where} role ${JSON.stringify(msg.role)} is not one of ${MESSAGE_ROLES.join(', ')}`);
    }
    validateContent(msg.content, where);
    if ('trainable' in msg && typeof msg.trainable !== 'boolean') {
      throw new DataFormatError(`${where} "trainable" must be true or false`);
    }
  });
  return messages as Message[];
}

function withTokenRecord(row: ConversationRow, data: unknown, at: string): ConversationRow {
  const record = tokenRecordOf(data as Record<string, unknown>, at);
  return record ? { ...row, record } : row;
}

/** Parse JSONL text. Blank lines are skipped; `displayPath` is used in error messages. */
export function parseConversationsJsonl(text: string, displayPath: string): ConversationRow[] {
  return parseJsonlRows(text, displayPath, (data, at, line) => withTokenRecord({ messages: validateConversation(data, at), line }, data, at), {
    emptyMessage: `${displayPath}: no conversations (the file is empty)`,
  });
}

/** An image part's path is relative to the file that names it (URLs and absolute paths are kept). */
function resolveImagePaths(rows: ConversationRow[], dir: string): ConversationRow[] {
  for (const row of rows) {
    for (const m of row.messages) {
      if (typeof m.content === 'string') continue;
      for (const p of m.content) {
        if (p.type === 'image' && typeof p.image === 'string' && !/^[a-z][a-z0-9+.-]*:/i.test(p.image)) {
          p.image = path.resolve(dir, p.image);
        }
      }
    }
  }
  return rows;
}

export async function loadConversationsJsonl(filePath: string, displayPath = filePath): Promise<ConversationRow[]> {
  const rows = parseConversationsJsonl(await readTextFile(filePath, displayPath), displayPath);
  return resolveImagePaths(rows, path.dirname(path.resolve(filePath)));
}
