export const REFERENCE_VERSION: string;
export function ensureReferenceEnv(opts?: { log?: (chunk: string) => void }): Promise<{ python: string; venv: string }>;
