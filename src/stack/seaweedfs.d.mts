export declare const SEAWEEDFS_MODULE: string;
export declare const SEAWEEDFS_VERSION: string;
export declare function seaweedFsPath(): string;
export declare function ensureSeaweedFs(opts?: { log?: (msg: string) => void }): Promise<string>;
