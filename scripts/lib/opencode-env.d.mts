export const OPENCODE_VERSION: string;
export function opencodeDir(): string;
export function ensureOpencode(opts?: { log?: (chunk: string) => void }): { bin: string; version: string };
