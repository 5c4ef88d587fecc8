// Which files of a dataset folder (local, or a Hub repo's file list) hold a given config and split,
// following the conventions `datasets.load_dataset` applies to repos without a loading script:
//   data/train-00000-of-00002.parquet, <config>/train-*.parquet, <config>/<split>/0000.parquet
//   (the Hub's parquet conversion), train.jsonl, test/*.jsonl, <name>-train-00000-of-00001.arrow
//   (HF's cache), and the folders `save_to_disk` writes (dataset_dict.json, state.json + .arrow).
// A split matches a path segment or a file name separated by -._ digits or space, with HF's split
// aliases (validation: valid, dev, val; …). When no file names any known split, all are "train".

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { DataFormatError } from '../errors.js';
import { dataFileKind, type DataFile } from './readers.js';

const SPLIT_ALIASES: Record<string, string[]> = {
  train: ['train', 'training'],
  validation: ['validation', 'valid', 'dev', 'val'],
  test: ['test', 'testing', 'eval', 'evaluation'],
};
const KNOWN_SPLITS = Object.keys(SPLIT_ALIASES);

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function splitPattern(split: string): RegExp {
  const names = (SPLIT_ALIASES[split] ?? [split]).map(escapeRe).join('|');
  return new RegExp(`(^|[-._ 0-9])(${names})([-._ 0-9]|$)`, 'i');
}

/** Does `rel` (a posix path inside the dataset) belong to `split`? */
export function matchesSplit(rel: string, split: string): boolean {
  const re = splitPattern(split);
  const segments = rel.split('/');
  const base = segments[segments.length - 1].replace(/\.[^.]+$/, '');
  return segments.slice(0, -1).some((d) => re.test(d)) || re.test(base);
}

/** Split names visible in a file list, for "splits found: …" in errors. */
function splitsIn(rels: string[]): string[] {
  const found = new Set<string>();
  for (const rel of rels) {
    for (const s of KNOWN_SPLITS) if (matchesSplit(rel, s)) found.add(s);
    const m = /(?:^|\/)([A-Za-z][\w]*)-\d{5}-of-\d{5}/.exec(rel);
    if (m) found.add(m[1]);
  }
  return [...found].sort();
}

/** Top-level folders that look like configs (not split folders, not `data/`). */
function configDirs(rels: string[]): string[] {
  const dirs = new Set<string>();
  for (const rel of rels) {
    const i = rel.indexOf('/');
    if (i < 0) continue;
    const dir = rel.slice(0, i);
    if (dir === 'data' || KNOWN_SPLITS.some((s) => matchesSplit(`${dir}/x`, s))) continue;
    dirs.add(dir);
  }
  return [...dirs].sort();
}

/**
 * The data files (posix paths relative to the dataset root) of config `name` and `split`, in
 * HF's order (sorted paths, so shard 00000 comes before 00001). `where` names the dataset in errors.
 */
export function selectSplitFiles(allRels: string[], name: string | null, split: string, where: string): string[] {
  let rels = allRels.filter((r) => dataFileKind(r) !== undefined && !r.split('/').some((s) => s.startsWith('.'))).sort();
  const configs = configDirs(rels);
  if (name !== null && name !== 'default') {
    const config = name;
    if (!configs.includes(config)) {
      throw new DataFormatError(`${where}: no config "${name}" (dataset.hf.name); configs found: ${configs.length ? configs.join(', ') : 'none (the dataset has a single config: set dataset.hf.name to null)'}`);
    }
    rels = rels.filter((r) => r.startsWith(`${config}/`)).map((r) => r.slice(config.length + 1));
  } else if (configs.length > 1) {
    throw new DataFormatError(`${where}: the dataset has several configs (${configs.join(', ')}); set dataset.hf.name to one of them`);
  } else if (configs.length === 1) {
    rels = rels.filter((r) => r.startsWith(`${configs[0]}/`)).map((r) => r.slice(configs[0].length + 1));
    name = configs[0];
  }
  const prefix = name !== null && name !== 'default' ? `${name}/` : '';
  const anySplit = rels.some((r) => KNOWN_SPLITS.some((s) => matchesSplit(r, s)) || /(?:^|\/)[A-Za-z]\w*-\d{5}-of-\d{5}/.test(r));
  // Without split names in the paths, everything is the train split (as in `datasets`).
  const chosen = anySplit ? rels.filter((r) => matchesSplit(r, split)) : split === 'train' ? rels : [];
  if (chosen.length === 0) {
    const found = anySplit ? splitsIn(rels) : ['train'];
    throw new DataFormatError(`${where}: no data files for split "${split}"${prefix ? ` of config "${name}"` : ''}; splits found: ${found.join(', ') || 'none'} (data files are .parquet, .arrow, .jsonl or .json)`);
  }
  return chosen.map((r) => prefix + r);
}

/**
 * Every file under `root`, as sorted posix paths relative to it (dot folders skipped). Symbolic
 * links are followed: a Hugging Face cache snapshot (`snapshots/<commit>/…`) links each file to
 * `blobs/`; a link whose target is missing (a download that never finished) is not a file.
 */
export function listFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const childRel = rel ? `${rel}/${entry.name}` : entry.name;
      let kind: 'dir' | 'file' | undefined = entry.isDirectory() ? 'dir' : entry.isFile() ? 'file' : undefined;
      if (entry.isSymbolicLink()) {
        try {
          const target = statSync(path.join(dir, entry.name));
          kind = target.isDirectory() ? 'dir' : target.isFile() ? 'file' : undefined;
        } catch {
          kind = undefined;
        }
      }
      if (kind === 'dir') walk(path.join(dir, entry.name), childRel);
      else if (kind === 'file') out.push(childRel);
    }
  };
  walk(root, '');
  return out.sort();
}

function readJson(file: string, display: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new DataFormatError(`${display}: cannot read (${(e as Error).message})`);
  }
}

/** A `Dataset.save_to_disk` folder: state.json lists its .arrow shards in order. */
function savedDatasetFiles(dir: string, display: string): DataFile[] {
  const state = readJson(path.join(dir, 'state.json'), `${display}/state.json`);
  const files = state._data_files;
  if (!Array.isArray(files) || files.length === 0) throw new DataFormatError(`${display}/state.json: "_data_files" lists no files`);
  return files.map((f: { filename?: unknown }) => {
    if (typeof f?.filename !== 'string') throw new DataFormatError(`${display}/state.json: a "_data_files" entry has no "filename"`);
    return { absPath: path.join(dir, f.filename), displayPath: `${display}/${f.filename}`, kind: 'arrow' as const };
  });
}

/**
 * The data files of `split` in a local dataset folder or file. `display` is the path as the user
 * wrote it. A single file is its own (only) split.
 */
export function localSplitFiles(root: string, display: string, name: string | null, split: string): DataFile[] {
  if (!existsSync(root)) throw new DataFormatError(`${display}: no such file or folder (dataset.hf.path)`);
  if (statSync(root).isFile()) {
    const kind = dataFileKind(root);
    if (!kind) throw new DataFormatError(`${display}: not a data file (.parquet, .arrow, .jsonl or .json) (dataset.hf.path)`);
    return [{ absPath: root, displayPath: display, kind }];
  }
  if (existsSync(path.join(root, 'dataset_dict.json'))) {
    const { splits } = readJson(path.join(root, 'dataset_dict.json'), `${display}/dataset_dict.json`) as { splits?: unknown };
    const names = Array.isArray(splits) ? (splits as string[]) : [];
    if (!names.includes(split)) throw new DataFormatError(`${display}: no split "${split}" in dataset_dict.json; splits found: ${names.join(', ') || 'none'}`);
    return savedDatasetFiles(path.join(root, split), `${display}/${split}`);
  }
  if (existsSync(path.join(root, 'state.json'))) {
    const { _split } = readJson(path.join(root, 'state.json'), `${display}/state.json`) as { _split?: unknown };
    // A saved Dataset (not DatasetDict) is one split; its recorded name is only checked when set.
    if (typeof _split === 'string' && _split !== split) {
      throw new DataFormatError(`${display}: this save_to_disk folder holds split "${_split}", not "${split}"`);
    }
    return savedDatasetFiles(root, display);
  }
  return selectSplitFiles(listFiles(root), name, split, display).map((rel) => ({
    absPath: path.join(root, ...rel.split('/')),
    displayPath: `${display.replace(/\/+$/, '')}/${rel}`,
    kind: dataFileKind(rel)!,
  }));
}
