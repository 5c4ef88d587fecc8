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
export declare const PEER_API_KEY: string;
export declare function peerLaunch(
  name: string,
  o: { python: string; modelDir: string; dir: string; port: number; apiKey?: string },
): { command: string; args: string[]; env: Record<string, string>; model: string };
