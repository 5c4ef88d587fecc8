export const WANDB_VERSION: string;
export function ensureWandbEnv(opts?: { log?: (chunk: string) => void }): Promise<{ python: string; venv: string }>;
