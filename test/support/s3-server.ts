// A real S3-compatible server for tests: SeaweedFS (src/stack/seaweedfs.mjs builds and caches its
// binary), all its parts (master, volume, filer, S3 gateway) in one process on free ports of
// 127.0.0.1, with credentials of its own and data in a temp folder. It goes down with the test
// process (the service launcher's reaper), and can be stopped and started again on the same ports
// and data (an outage the store must ride out).
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOnPorts } from '../../src/cli/ports.js';
import { s3Client } from '../../src/cookbook/stores/s3.js';
import { httpOk, spawnService, type Service } from '../../src/cli/services.js';
import { ensureSeaweedFs } from '../../src/stack/seaweedfs.mjs';
import { lostItsPort } from './free-port.js';
import { timed } from './timing.js';

// A type, not an interface: it passes as a NodeJS.ProcessEnv (s3Client(env), a child's env).
export type S3ServerEnv = {
  AWS_ACCESS_KEY_ID: string;
  AWS_SECRET_ACCESS_KEY: string;
  AWS_REGION: string;
  AWS_ENDPOINT_URL_S3: string;
};

export interface S3Server {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  /** What a process needs to reach this server as the standard AWS settings. */
  env: S3ServerEnv;
  dataDir: string;
  logFile: string;
  createBucket(name: string): Promise<void>;
  /** The server process down (SIGTERM, then SIGKILL: it does not exit on its own); the data kept. */
  stop(): Promise<void>;
  /** Up again on the same ports and data. */
  start(): Promise<void>;
  /** stop(), then the data removed. */
  close(): Promise<void>;
}

// master, volume, filer and S3 gateway: an HTTP port and a gRPC port each.
const PARTS = ['master', 'volume', 'filer', 's3'] as const;
/** Where readiness is proved by a write. */
const PROBE_BUCKET = 'cookbook-ready-probe';

function weedArgs(dir: string, ports: number[], configFile: string): string[] {
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc] = ports;
  return [
    '-logtostderr',
    'server',
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-dir=${dir}`,
    `-master.port=${master}`,
    `-master.port.grpc=${masterGrpc}`,
    '-master.volumeSizeLimitMB=64',
    '-master.telemetry=false',
    '-master.electionTimeout=500ms',
    '-master.peers=none',
    `-volume.port=${volume}`,
    `-volume.port.grpc=${volumeGrpc}`,
    // Each bucket is a collection with volumes of its own: room for the buckets of a whole test run.
    '-volume.max=100',
    '-filer',
    `-filer.port=${filer}`,
    `-filer.port.grpc=${filerGrpc}`,
    `-filer.localSocket=${join(dir, 'filer.sock')}`,
    '-s3',
    `-s3.port=${s3}`,
    `-s3.port.grpc=${s3Grpc}`,
    `-s3.localSocket=${join(dir, 's3.sock')}`,
    // Its Iceberg and Lance catalogs would take fixed ports (8181, 9101) that parallel servers share.
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    // As AWS S3: a put into a missing bucket fails instead of creating it.
    '-s3.autoCreateBucket=false',
    `-s3.config=${configFile}`,
  ];
}

export async function startS3Server(opts: { buckets?: string[] } = {}): Promise<S3Server> {
  const weed = await ensureSeaweedFs({ log: (msg) => console.error(`[s3-server] ${msg}`) });
  const root = mkdtempSync(join(tmpdir(), 'cookbook-s3-'));
  const dataDir = join(root, 'data');
  const logFile = join(root, 'weed.log');
  const configFile = join(root, 's3.json');
  mkdirSync(dataDir);
  const accessKey = `cookbook-${randomBytes(4).toString('hex')}`;
  const secretKey = randomBytes(20).toString('hex');
  writeFileSync(configFile, JSON.stringify({ identities: [{ name: 'cookbook', credentials: [{ accessKey, secretKey }], actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'] }] }));

  const probeEnv = (s3Port: number) => ({ AWS_ACCESS_KEY_ID: accessKey, AWS_SECRET_ACCESS_KEY: secretKey, AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${s3Port}`, AWS_MAX_ATTEMPTS: '1' });
  const writes = async (s3Port: number): Promise<boolean> => {
    const client = s3Client(probeEnv(s3Port));
    try {
      await client.send(new CreateBucketCommand({ Bucket: PROBE_BUCKET })).catch((err: unknown) => {
        if (!/BucketAlreadyOwnedByYou|BucketAlreadyExists/.test((err as Error).name)) throw err;
      });
      await client.send(new PutObjectCommand({ Bucket: PROBE_BUCKET, Key: 'ready', Body: 'ready' }));
      return true;
    } catch {
      return false;
    }
  };
  const launch = (ports: number[]): Promise<Service> => {
    const s3Port = ports[6];
    return timed('s3 start', () =>
      spawnService({
        name: 'seaweedfs',
        command: weed,
        args: weedArgs(dataDir, ports, configFile),
        logFile,
        ports,
        // Its S3 port answers seconds before a write can go through (the filer's lock ring and the
        // master's first volumes form after it): ready once a write does.
        ready: async () => (await httpOk(`http://127.0.0.1:${s3Port}/healthz`)) && (await writes(s3Port)),
      }),
    );
  };
  const wanted = PARTS.flatMap((part) => [{ what: `SeaweedFS ${part}` }, { what: `SeaweedFS ${part} gRPC` }]);
  let started: { ports: number[]; service: Service };
  try {
    started = await startOnPorts(wanted, launch, { lostPort: lostItsPort });
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  const { ports } = started;
  let service: Service | undefined = started.service;
  const endpoint = `http://127.0.0.1:${ports[6]}`;
  const env: S3ServerEnv = { AWS_ACCESS_KEY_ID: accessKey, AWS_SECRET_ACCESS_KEY: secretKey, AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_S3: endpoint };
  const admin = s3Client(env);

  const server: S3Server = {
    endpoint,
    env,
    dataDir,
    logFile,
    async createBucket(name) {
      await admin.send(new CreateBucketCommand({ Bucket: name }));
    },
    async stop() {
      // SeaweedFS shuts its parts down on SIGTERM in well under a second, then hangs.
      await service?.stop(1500);
      service = undefined;
    },
    async start() {
      if (!service) service = await launch(ports);
    },
    async close() {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
      // Its gRPC sockets have fixed names in /tmp, one per port.
      for (const [i, part] of PARTS.entries()) rmSync(`/tmp/seaweedfs-${part}-grpc-${ports[2 * i + 1]}.sock`, { force: true });
    },
  };
  try {
    for (const bucket of opts.buckets ?? []) await server.createBucket(bucket);
  } catch (err) {
    await server.close();
    throw err;
  }
  return server;
}

/**
 * The run's shared S3 server (test/support/shared-stack.ts) with these buckets, when the run has one;
 * else a server of the file's own. A file that stops or restarts its server calls startS3Server.
 */
export async function s3ServerForFile(opts: { buckets?: string[] } = {}): Promise<S3Server> {
  let shared: { endpoint: string; env: S3ServerEnv; logFile: string } | null = null;
  try {
    shared = (await import('vitest')).inject('sharedS3');
  } catch {
    shared = null;
  }
  if (!shared) return startS3Server(opts);
  const admin = s3Client(shared.env);
  const refuse = (what: string) => async () => {
    throw new Error(`the shared S3 server cannot be ${what}: start this file's own with startS3Server()`);
  };
  const server: S3Server = {
    endpoint: shared.endpoint,
    env: shared.env,
    dataDir: '',
    logFile: shared.logFile,
    async createBucket(name) {
      await admin.send(new CreateBucketCommand({ Bucket: name })).catch((err: unknown) => {
        if (!/BucketAlreadyOwnedByYou|BucketAlreadyExists/.test((err as Error).name)) throw err;
      });
    },
    stop: refuse('stopped'),
    start: refuse('restarted'),
    async close() {
      // the run's teardown stops it
    },
  };
  for (const bucket of opts.buckets ?? []) await server.createBucket(bucket);
  return server;
}

/** Sets the server's AWS settings in this process (a test's CLI host); returns what puts the old ones back. */
export function useS3Env(server: S3Server): () => void {
  const saved = Object.keys(server.env).map((k) => [k, process.env[k]] as const);
  Object.assign(process.env, server.env);
  return () => {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}
