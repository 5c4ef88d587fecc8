export declare const INSPECT_AI_VERSION: string;
export declare const OPENAI_PY_VERSION: string;
export declare function inspectVenvPath(): string;
export declare function ensureInspectEnv(opts?: { log?: (chunk: string) => void }): Promise<{ python: string; inspect: string; venv: string }>;
