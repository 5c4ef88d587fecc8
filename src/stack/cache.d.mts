export declare function cacheRoot(): string;
