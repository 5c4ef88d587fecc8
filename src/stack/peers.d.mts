export interface PeerSpec {
  version: string;
  pipInstalls: () => string[][];
}
export declare const PEERS: Record<'skyrl-tx' | 'tuft' | 'hatchery', PeerSpec>;
export declare const PEER_NAMES: Array<'skyrl-tx' | 'tuft' | 'hatchery'>;
export declare function peersRoot(): string;
export declare function peerVenvPath(name: string): string;
export declare function ensurePeer(name: string, opts?: { log?: (chunk: string) => void }): Promise<{ name: string; version: string; python: string; venv: string }>;
export declare function ensureTinyQwen3Model(opts?: { log?: (chunk: string) => void }): Promise<string>;
