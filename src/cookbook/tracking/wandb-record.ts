// wandb's `Record` protobuf messages (wandb_record.proto, a subset of wandb_internal.proto) for the
// offline record stream: the run with its config, history rows, the summary, the final checkpoint
// as a "model" artifact, the exit and the final record. Values travel as JSON strings
// (`value_json`), as wandb's own client writes them.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { historyRow } from './wandb-format.js';

const PROTO_FILE = 'wandb_record.proto';

/** Next to this module, or (for a tsc build under dist/) back in the source tree. */
function locateProto(): string {
  const candidates = [new URL(`./${PROTO_FILE}`, import.meta.url), new URL(`../../../../src/cookbook/tracking/${PROTO_FILE}`, import.meta.url)].map((u) => fileURLToPath(u));
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`cannot find ${PROTO_FILE}; looked in ${candidates.join(', ')}`);
  return found;
}

let recordType: protobuf.Type | undefined;
function recordMessage(): protobuf.Type {
  recordType ??= protobuf.parse(readFileSync(locateProto(), 'utf8'), { keepCase: true }).root.lookupType('wandb_internal.Record');
  return recordType;
}

const json = (v: unknown) => JSON.stringify(v ?? null);
const items = (o: Record<string, unknown>) => Object.entries(o).map(([key, value]) => ({ key, value_json: json(value) }));

function encode(num: number, body: Record<string, unknown>): Buffer {
  const type = recordMessage();
  const err = type.verify({ num, ...body });
  if (err) throw new Error(`wandb Record: ${err}`);
  return Buffer.from(type.encode(type.fromObject({ num, ...body })).finish());
}

export interface RunInfo {
  runId: string;
  project: string;
  displayName: string | null;
  config: Record<string, unknown>;
  startedAt: Date;
}

export function runRecord(num: number, run: RunInfo): Buffer {
  const ms = run.startedAt.getTime();
  return encode(num, {
    run: {
      run_id: run.runId,
      project: run.project,
      display_name: run.displayName ?? '',
      config: { update: items(run.config) },
      start_time: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 },
    },
  });
}

/** A metrics.jsonl row as a history record at its step (`_step`, as W&B numbers rows). */
export function historyRecord(num: number, row: Record<string, unknown>): Buffer {
  return encode(num, { history: { item: items(historyRow(row)), step: { num: Number(row.step) } } });
}

export function summaryRecord(num: number, summary: Record<string, unknown>): Buffer {
  return encode(num, { summary: { update: items(summary) } });
}

export interface ArtifactEntry {
  path: string;
  digest: string;
  ref?: string;
  size?: number;
  localPath?: string;
}

export interface ArtifactInfo {
  runId: string;
  project: string;
  type: string;
  name: string;
  digest: string;
  description: string;
  metadata: Record<string, unknown>;
  aliases: string[];
  entries: ArtifactEntry[];
}

export function artifactRecord(num: number, a: ArtifactInfo): Buffer {
  return encode(num, {
    artifact: {
      run_id: a.runId,
      project: a.project,
      type: a.type,
      name: a.name,
      digest: a.digest,
      description: a.description,
      metadata: JSON.stringify(a.metadata),
      user_created: true,
      aliases: a.aliases,
      finalize: true,
      manifest: {
        version: 1,
        storage_policy: 'wandb-storage-policy-v1',
        contents: a.entries.map((e) => ({ path: e.path, digest: e.digest, ref: e.ref ?? '', size: e.size ?? 0, local_path: e.localPath ?? '' })),
      },
    },
  });
}

export function exitRecord(num: number, exitCode: number, runtimeSeconds: number): Buffer {
  return encode(num, { exit: { exit_code: exitCode, runtime: runtimeSeconds } });
}

export function finalRecord(num: number): Buffer {
  return encode(num, { final: {} });
}
