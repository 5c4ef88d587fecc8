export declare const REPO_ROOT: string;
export declare const ENGINE_DIR: string;
export declare function engineVenvPath(flavour?: 'default' | 'cpu'): string;
export declare function pidAlive(pid: number): boolean;
export declare function buildCachedVenv(
  venv: string,
  opts: {
    log: (chunk: string) => void;
    banner: string;
    marker: object;
    install: (python: string, run: (cmd: string, args: string[]) => Promise<void>) => Promise<void>;
  },
): Promise<void>;
export declare function ensureEngineEnv(opts?: { log?: (chunk: string) => void }): Promise<{ python: string; venv: string }>;
export declare function engineProcessEnv(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
