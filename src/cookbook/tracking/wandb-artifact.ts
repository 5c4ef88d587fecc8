// The final checkpoint as a W&B artifact of type "model": its checkpoints.jsonl as a file, and the
// weights it names (tinker:// paths, which W&B cannot fetch) as reference entries, whose digest is
// the reference itself as W&B keeps for URIs it does not know. The artifact digest is W&B's
// manifest digest: md5 over "wandb-artifact-manifest-v1\n" and "<path>:<digest>\n" per entry, by path.
import { createHash } from 'node:crypto';
import type { ArtifactEntry } from './wandb-record.js';

export interface ModelArtifact {
  name: string;
  type: 'model';
  digest: string;
  description: string;
  metadata: Record<string, unknown>;
  aliases: string[];
  entries: ArtifactEntry[];
  /** The checkpoints.jsonl entry's content (uploaded, or copied beside an offline run). */
  checkpointsJsonl: string;
}

export const b64md5 = (data: string | Buffer) => createHash('md5').update(data).digest('base64');

/**
 * The manifest file W&B stores beside an artifact (`wandb_manifest.json`), byte for byte as its
 * client writes it (`json.dump(manifest.to_manifest_json(), indent=4)`): entries without their
 * default fields, references with `ref`, files with `size`.
 */
export function manifestJson(entries: ArtifactEntry[]): string {
  const contents: Record<string, Record<string, unknown>> = {};
  for (const e of entries) contents[e.path] = { digest: e.digest, ...(e.ref ? { ref: e.ref } : {}), ...(e.size !== undefined ? { size: e.size } : {}) };
  return JSON.stringify({ version: 1, storagePolicy: 'wandb-storage-policy-v1', storagePolicyConfig: { storageLayout: 'V2' }, contents }, null, 4);
}

export function manifestDigest(entries: ArtifactEntry[]): string {
  const h = createHash('md5').update('wandb-artifact-manifest-v1\n');
  for (const e of [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) h.update(`${e.path}:${e.digest}\n`);
  return h.digest('hex');
}

/** The artifact for a run's final checkpoint row, with the run's checkpoints.jsonl. */
export function modelArtifact(runId: string, final: Record<string, unknown>, checkpointsJsonl: string): ModelArtifact {
  const entries: ArtifactEntry[] = [{ path: 'checkpoints.jsonl', digest: b64md5(checkpointsJsonl), size: Buffer.byteLength(checkpointsJsonl) }];
  for (const key of ['state_path', 'sampler_path'] as const) {
    const ref = final[key];
    if (typeof ref === 'string' && ref) entries.push({ path: key, digest: ref, ref });
  }
  return {
    name: `model-${runId}`,
    type: 'model',
    digest: manifestDigest(entries),
    description: 'final checkpoint of a durable-cookbook run',
    metadata: final,
    aliases: ['latest', 'final'],
    entries,
    checkpointsJsonl,
  };
}
