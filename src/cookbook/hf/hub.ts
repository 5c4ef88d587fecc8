// Hugging Face Hub datasets by id: list the repo's files at a revision (GET
// {endpoint}/api/datasets/{id}/revision/{revision}), pick the split's files with the same layout
// rules as a local folder, and download each one ({endpoint}/datasets/{id}/resolve/{revision}/{file})
// into ~/.cache/durable-cookbook/hf-datasets/<id>/<revision>/. When the repo's own files hold no
// such split (a script-based dataset, compressed JSON), the Hub's parquet conversion is used
// ({endpoint}/api/datasets/{id}/parquet/{config}/{split}). Every file is written under a temporary
// name and renamed when complete, so an interrupted download never passes for a cached file.
// Environment: HF_TOKEN (sent as a bearer token), HF_ENDPOINT (default https://huggingface.co),
// HF_HUB_OFFLINE=1 (use the cache only), DURABLE_COOKBOOK_HF_CACHE (the cache root).
//
// A dataset already in the Hugging Face hub cache (what `huggingface-cli download`, `snapshot_download`
// and `datasets` fill: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub) is read from
// its snapshot folder, `datasets--<owner>--<name>/snapshots/<commit>/` with the commit from
// `refs/<revision>` (or the revision itself when it is a commit), without asking the Hub anything.

import { createWriteStream, existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { DataError, DataFormatError } from '../errors.js';
import { localSplitFiles, selectSplitFiles } from './layout.js';
import { dataFileKind, type DataFile } from './readers.js';

/** A Hub id: "name" or "owner/name" (letters, digits, - _ .). */
export const HUB_ID_RE = /^[A-Za-z0-9][\w.-]*(\/[A-Za-z0-9][\w.-]*)?$/;

const LISTING_TIMEOUT_MS = 30_000;

export interface HubOptions {
  /** Defaults: the environment (see the file comment). */
  endpoint?: string;
  token?: string;
  offline?: boolean;
  cacheRoot?: string;
  /** The Hugging Face hub cache to look in first (default: hfHubCacheRoot()). */
  hfHubCache?: string;
}

const expandHome = (p: string) => (p.startsWith('~') ? path.join(os.homedir(), p.slice(1)) : p);

/** huggingface_hub's HF_HUB_CACHE: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub. */
export function hfHubCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.HF_HUB_CACHE || env.HUGGINGFACE_HUB_CACHE;
  if (explicit) return expandHome(explicit);
  const home = env.HF_HOME ? expandHome(env.HF_HOME) : path.join(env.XDG_CACHE_HOME ? expandHome(env.XDG_CACHE_HOME) : path.join(os.homedir(), '.cache'), 'huggingface');
  return path.join(home, 'hub');
}

/** The snapshot folder of dataset `id` at `revision` in the hub cache `root`, when one was downloaded there. */
export function hfCacheSnapshot(id: string, revision: string, root: string = hfHubCacheRoot()): { dir: string; commit: string } | undefined {
  const repo = path.join(root, `datasets--${id.replaceAll('/', '--')}`);
  const ref = path.join(repo, 'refs', ...revision.split('/'));
  let commit: string | undefined;
  if (existsSync(ref) && statSync(ref).isFile()) commit = readFileSync(ref, 'utf8').trim();
  else if (/^[0-9a-f]{40}$/.test(revision)) commit = revision;
  if (!commit) return undefined;
  const dir = path.join(repo, 'snapshots', commit);
  return existsSync(dir) && statSync(dir).isDirectory() ? { dir, commit } : undefined;
}

function settings(opts: HubOptions) {
  const offlineEnv = (process.env.HF_HUB_OFFLINE ?? '').toLowerCase();
  return {
    endpoint: (opts.endpoint ?? process.env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/+$/, ''),
    token: opts.token ?? (process.env.HF_TOKEN || undefined),
    offline: opts.offline ?? ['1', 'true', 'yes', 'on'].includes(offlineEnv),
    cacheRoot: opts.cacheRoot ?? process.env.DURABLE_COOKBOOK_HF_CACHE ?? path.join(os.homedir(), '.cache', 'durable-cookbook', 'hf-datasets'),
    hfHubCache: opts.hfHubCache ?? hfHubCacheRoot(),
  };
}

/** The hint every Hub failure ends with: this project also reads the same files from a folder. */
function localHint(id: string): string {
  const folder = `./${id.split('/').pop()}`;
  return (
    `download it where the Hub can be reached (e.g. \`huggingface-cli download --repo-type dataset ${id} --local-dir ${folder}\`) ` +
    `and set dataset.hf.path to that local folder instead`
  );
}

class HubError extends DataError {}

/** Write `data` (or a download) to `dest` through a temporary file in the same folder, then rename. */
async function writeAtomically(dest: string, write: (tmp: string) => Promise<void>): Promise<void> {
  await mkdir(path.dirname(dest), { recursive: true });
  const tmp = `${dest}.part-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  try {
    await write(tmp);
    await rename(tmp, dest);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

interface Listing {
  /** Repo file paths at the revision. */
  files: string[];
  /** Parquet-conversion files: cache path → URL, filled when used. */
  converted?: Record<string, string>;
}

export class HubDataset {
  private readonly s: ReturnType<typeof settings>;
  readonly cacheDir: string;

  constructor(
    readonly id: string,
    readonly revision: string,
    opts: HubOptions = {},
  ) {
    this.s = settings(opts);
    // A revision like refs/pr/1 must stay one folder.
    this.cacheDir = path.join(this.s.cacheRoot, ...id.split('/'), revision.replaceAll('/', '--'));
  }

  private get label(): string {
    return `Hugging Face dataset "${this.id}" (revision ${this.revision})`;
  }

  private async get(url: string, what: string, timeoutMs?: number): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(url, {
        headers: this.s.token ? { authorization: `Bearer ${this.s.token}` } : {},
        redirect: 'follow',
        signal: timeoutMs ? AbortSignal.timeout(timeoutMs) : undefined,
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (e as Error).message;
      throw new HubError(`dataset.hf.path: cannot reach the Hugging Face Hub at ${this.s.endpoint} to ${what} of ${this.label} (${why}); ${localHint(this.id)}`);
    }
    if (res.ok) return res;
    const hint =
      res.status === 401 || res.status === 403
        ? 'the dataset is gated or private: accept its terms on the Hub and set HF_TOKEN'
        : res.status === 404
          ? 'no such dataset or revision on the Hub (check dataset.hf.path and dataset.hf.revision)'
          : `HTTP ${res.status} ${res.statusText}`;
    throw new HubError(`dataset.hf.path: cannot ${what} of ${this.label}: ${hint}; or ${localHint(this.id)}`);
  }

  private listingPath(): string {
    return path.join(this.cacheDir, '.listing.json');
  }

  private async listing(): Promise<Listing> {
    if (this.s.offline) {
      try {
        return JSON.parse(await readFile(this.listingPath(), 'utf8')) as Listing;
      } catch {
        throw new HubError(`dataset.hf.path: HF_HUB_OFFLINE is set and ${this.label} is not in the cache ${this.cacheDir}; ${localHint(this.id)}`);
      }
    }
    const url = `${this.s.endpoint}/api/datasets/${this.id}/revision/${encodeURIComponent(this.revision)}`;
    const body = (await (await this.get(url, 'list the files', LISTING_TIMEOUT_MS)).json()) as { siblings?: Array<{ rfilename?: unknown }> };
    const files = (body.siblings ?? []).map((s) => s.rfilename).filter((f): f is string => typeof f === 'string');
    const previous = existsSync(this.listingPath()) ? ((JSON.parse(await readFile(this.listingPath(), 'utf8')) as Listing).converted ?? {}) : {};
    const listing: Listing = { files, converted: previous };
    await writeAtomically(this.listingPath(), (tmp) => writeFile(tmp, JSON.stringify(listing)));
    return listing;
  }

  /** The Hub's parquet conversion of one config/split: cache paths → URLs. */
  private async convertedFiles(listing: Listing, name: string | null, split: string): Promise<Record<string, string>> {
    const config = name ?? 'default';
    const prefix = `_parquet/${config}/${split}/`;
    const cached = Object.entries(listing.converted ?? {}).filter(([rel]) => rel.startsWith(prefix));
    if (cached.length || this.s.offline) return Object.fromEntries(cached);
    const url = `${this.s.endpoint}/api/datasets/${this.id}/parquet/${encodeURIComponent(config)}/${encodeURIComponent(split)}`;
    const urls = (await (await this.get(url, `list the parquet conversion of ${config}/${split}`, LISTING_TIMEOUT_MS)).json()) as unknown;
    if (!Array.isArray(urls) || urls.length === 0) return {};
    const out: Record<string, string> = {};
    urls.forEach((u, i) => (out[`${prefix}${String(i).padStart(5, '0')}.parquet`] = String(u)));
    listing.converted = { ...listing.converted, ...out };
    await writeAtomically(this.listingPath(), (tmp) => writeFile(tmp, JSON.stringify(listing)));
    return out;
  }

  private async download(rel: string, url: string): Promise<void> {
    const dest = path.join(this.cacheDir, ...rel.split('/'));
    if (existsSync(dest)) return;
    if (this.s.offline) throw new HubError(`dataset.hf.path: HF_HUB_OFFLINE is set and ${rel} of ${this.label} is not in the cache ${this.cacheDir}; ${localHint(this.id)}`);
    const res = await this.get(url, `download ${rel}`);
    if (!res.body) throw new HubError(`dataset.hf.path: empty response downloading ${rel} of ${this.label}`);
    await writeAtomically(dest, (tmp) => pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), createWriteStream(tmp)));
  }

  /** Downloads (or finds in a cache) the files of `split`, in order. */
  async splitFiles(name: string | null, split: string): Promise<DataFile[]> {
    const snapshot = hfCacheSnapshot(this.id, this.revision, this.s.hfHubCache);
    if (snapshot) {
      try {
        return localSplitFiles(snapshot.dir, this.id, name, split);
      } catch (e) {
        // A snapshot holds what was downloaded into it; offline, that is all there is.
        if (!(e instanceof DataFormatError) || this.s.offline) {
          throw e instanceof DataFormatError ? new DataFormatError(`${e.message} (read from the Hugging Face cache snapshot ${snapshot.dir})`) : e;
        }
      }
    }
    const listing = await this.listing();
    let files: Record<string, string>;
    try {
      const rels = selectSplitFiles(listing.files, name, split, this.id);
      files = Object.fromEntries(rels.map((r) => [r, `${this.s.endpoint}/datasets/${this.id}/resolve/${encodeURIComponent(this.revision)}/${r.split('/').map(encodeURIComponent).join('/')}`]));
    } catch (e) {
      if (!(e instanceof DataFormatError)) throw e;
      files = await this.convertedFiles(listing, name, split);
      if (Object.keys(files).length === 0) throw e;
    }
    for (const [rel, url] of Object.entries(files)) await this.download(rel, url);
    return Object.keys(files).map((rel) => ({ absPath: path.join(this.cacheDir, ...rel.split('/')), displayPath: `${this.id}/${rel}`, kind: dataFileKind(rel)! }));
  }
}
