export declare const CPU_TORCH_INDEX: string;
export declare function cpuTorchIndex(env?: Record<string, string | undefined>): string;
export declare function hasNvidiaGpu(): boolean;
export declare function cpuIndexReachable(index?: string, timeoutMs?: number): Promise<boolean>;
export declare function chooseTorchBuild(opts: {
  setting?: string;
  platform: string;
  built: { cpu: boolean; default: boolean };
  nvidiaGpu: () => boolean;
  probe: () => Promise<boolean>;
  cpuIndex?: string;
}): Promise<{ flavour: 'cpu' | 'default'; reason: string }>;
export declare function venvName(requirementsHash: string, flavour: 'cpu' | 'default'): string;
export declare function pipInstalls(opts: {
  flavour: 'cpu' | 'default';
  requirementsFile: string;
  torchPin?: string;
  pipIndexUrl?: string;
  cpuIndex?: string;
}): string[][];
export declare function buildWithFallback<T>(opts: {
  flavour: 'cpu' | 'default';
  forced: boolean;
  build: (flavour: 'cpu' | 'default', reason?: string) => Promise<T>;
  log: (line: string) => void;
}): Promise<T>;
