export declare const MIN_NODE_VERSION: string;
export declare function nodeVersionProblem(version?: string): string | undefined;
export declare function exitIfUnsupportedNode(version?: string): void;
