export declare class WorkerUserError extends Error {}
export declare function workerIdentity(opts: {
  env: Record<string, string | undefined>;
  statOf?: (path: string) => { uid: number; gid: number; isDirectory(): boolean };
}): { runsDir: string; uid: number; gid: number; owner: { uid: number; gid: number }; from: 'owner' | 'COOKBOOK_UID' };
export declare function becomeWorkerUser(env?: Record<string, string | undefined>): string;
