// `hf` dataset sources (docs/hf-datasets.md): Hub layouts read from local folders (parquet shards,
// Arrow IPC, JSONL), formats and column mapping, split selection, streaming through the seeded
// shuffle buffer, errors that name file, row and config path, and Hub downloads (a fake Hub on
// 127.0.0.1, an unreachable endpoint, HF_HUB_OFFLINE).

import { createServer, type Server } from 'node:http';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HfSourceSchema, type HfSourceInput } from '../../src/cookbook/hf/config.js';
import { bindFormat, parseHhhConversation, type FormatKind } from '../../src/cookbook/hf/formats.js';
import { HubDataset } from '../../src/cookbook/hf/hub.js';
import { matchesSplit } from '../../src/cookbook/hf/layout.js';
import { loadSplit, splitFiles, type HfRow } from '../../src/cookbook/hf/source.js';
import { effectiveSeed, NumpyGenerator, shuffleBuffer } from '../../src/cookbook/hf/shuffle-buffer.js';
import { buildPreferenceDatasets } from '../../src/cookbook/preference/dataset.js';
import { buildRLDatasets } from '../../src/cookbook/rl/datasets.js';
import { numpyPermutation } from '../../src/cookbook/shuffle.js';
import { buildChatDatasets } from '../../src/cookbook/supervised/dataset.js';
import { a, chatRow, gsm8kFolder, noRobotsFolder, savedDatasetDict, u, writeArrow, writeJsonl, writeParquet } from './hf-fixtures.js';

const dir = mkdtempSync(path.join(tmpdir(), 'cookbook-hf-'));
const noRobots = noRobotsFolder(path.join(dir, 'no_robots'));
const gsm8k = gsm8kFolder(path.join(dir, 'gsm8k'));
const src = (input: HfSourceInput) => HfSourceSchema.parse(input);

async function rows<K extends FormatKind>(kind: K, input: HfSourceInput, split?: string) {
  const s = src(input);
  return loadSplit(s, split ?? s.split, bindFormat(kind, s.format, s.columns));
}
const firstUser = (r: HfRow<Array<{ content: unknown }>>) => r.value[0].content;

describe('layouts and splits', () => {
  it('reads parquet shards in shard order, row group by row group, each codec', async () => {
    const train = await rows('chat', { path: noRobots });
    expect(train.rows.map(firstUser)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => `question ${i}`));
    expect(train.rows.map((r) => r.line)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(train.rows[6].at).toBe(`${noRobots}/data/train-00001-of-00002.parquet row 2`);
    expect(train.rows[0].value).toEqual(chatRow(0).messages);
  });

  it('selects a split by name, and says which splits exist when it is missing', async () => {
    const test = await rows('chat', { path: noRobots, split: 'test' });
    expect(test.rows.map(firstUser)).toEqual(['question 100', 'question 101']);
    await expect(rows('chat', { path: noRobots, split: 'validation' })).rejects.toThrow(/no data files for split "validation"; splits found: test, train/);
  });

  it('matches HF split names and aliases in file and folder names', () => {
    expect(matchesSplit('data/train-00000-of-00002.parquet', 'train')).toBe(true);
    expect(matchesSplit('no_robots-train.parquet', 'train')).toBe(true);
    expect(matchesSplit('no_robots/default/0.0.0/abc123/no_robots-train-00000-of-00002.arrow', 'train')).toBe(true); // HF's cache
    expect(matchesSplit('dev/part0.jsonl', 'validation')).toBe(true);
    expect(matchesSplit('latest.jsonl', 'test')).toBe(false);
    expect(matchesSplit('main/test/0000.parquet', 'test')).toBe(true);
  });

  it('picks a config folder, and asks for one when there are several', async () => {
    await expect(rows('problem', { path: gsm8k })).rejects.toThrow(/several configs \(main, socratic\); set dataset\.hf\.name/);
    await expect(rows('problem', { path: gsm8k, name: 'other' })).rejects.toThrow(/no config "other" \(dataset\.hf\.name\); configs found: main, socratic/);
    const main = await rows('problem', { path: gsm8k, name: 'main', format: 'gsm8k' });
    expect(main.rows.map((r) => r.value.answer)).toEqual(['2', '4', '6', '8']);
    expect(main.rows[0].at).toBe(`${gsm8k}/main/train-00000-of-00001.parquet row 1`);
  });

  it('reads a save_to_disk DatasetDict (Arrow stream shards listed in state.json)', async () => {
    const saved = savedDatasetDict(path.join(dir, 'saved'), { train: [0, 1, 2, 3, 4].map(chatRow), test: [9].map(chatRow) }, { messages: 'messages' });
    const train = await rows('chat', { path: saved });
    expect(train.rows.map(firstUser)).toEqual(['question 0', 'question 1', 'question 2', 'question 3', 'question 4']);
    expect(train.rows[4].at).toBe(`${saved}/train/data-00001-of-00002.arrow row 2`);
    expect((await rows('chat', { path: saved }, 'test')).rows.map(firstUser)).toEqual(['question 9']);
    await expect(rows('chat', { path: saved }, 'validation')).rejects.toThrow(/no split "validation" in dataset_dict\.json; splits found: train, test/);
  });

  it('reads an Arrow IPC file-format file, a JSONL folder and a single file', async () => {
    const arrowFile = writeArrow(path.join(dir, 'uf.arrow'), [{ instruction: 'hi', chosen_response: 'good', rejected_response: 'bad' }], 'file');
    const uf = await rows('preference', { path: arrowFile, format: 'ultrafeedback' });
    expect(uf.rows[0].value).toEqual({ comparison: { prompt_conversation: [u('hi')], completion_A: [a('good')], completion_B: [a('bad')] }, label: 'A' });
    writeJsonl(path.join(dir, 'jsonl/train.jsonl'), [chatRow(1), '', chatRow(2)]);
    writeJsonl(path.join(dir, 'jsonl/validation.jsonl'), [chatRow(3)]);
    const train = await rows('chat', { path: path.join(dir, 'jsonl') });
    expect(train.rows.map((r) => r.at)).toEqual([`${dir}/jsonl/train.jsonl:1`, `${dir}/jsonl/train.jsonl:3`]);
    expect((await rows('chat', { path: path.join(dir, 'jsonl') }, 'validation')).rows.length).toBe(1);
  });
});

describe('formats, column mapping and errors', () => {
  it('maps a differently named column with dataset.hf.columns', async () => {
    const file = writeParquet(path.join(dir, 'renamed/train.parquet'), [0, 1].map((i) => ({ conversation: chatRow(i).messages })), { messagesColumn: 'conversation' });
    const loaded = await rows('chat', { path: path.dirname(file), columns: { messages: 'conversation' } });
    expect(loaded.rows.map(firstUser)).toEqual(['question 0', 'question 1']);
    await expect(rows('chat', { path: path.dirname(file) })).rejects.toThrow(
      `${path.dirname(file)}/train.parquet row 1: no column "messages" for field "messages" of format "messages" (dataset.hf.columns.messages); the row's columns: conversation`,
    );
    expect(() => bindFormat('chat', 'messages', { msgs: 'x' })).toThrow(/dataset\.hf\.columns\.msgs: format "messages" has no field "msgs" \(fields: messages\)/);
    expect(() => bindFormat('chat', 'alpaca', {})).toThrow(/dataset\.hf\.format: unknown chat format "alpaca" \(formats: messages, no_robots, tulu3, prompt_completion\)/);
  });

  it('a bad row names the file and the row, with the JSONL loader\'s wording', async () => {
    writeJsonl(path.join(dir, 'bad/train.jsonl'), [chatRow(0), chatRow(1), { messages: [{ role: 'robot', content: 'x' }] }]);
    await expect(rows('chat', { path: path.join(dir, 'bad') })).rejects.toThrow(`${dir}/bad/train.jsonl:3: message 0 role "robot" is not one of system, user, assistant, tool`);
    writeJsonl(path.join(dir, 'badjson/train.jsonl'), [chatRow(0), '{not json']);
    await expect(rows('chat', { path: path.join(dir, 'badjson') })).rejects.toThrow(`${dir}/badjson/train.jsonl:2: invalid JSON`);
    writeParquet(path.join(dir, 'badpq/train.parquet'), [{ messages: chatRow(0).messages }, { messages: [] }], { messagesColumn: 'messages' });
    await expect(rows('chat', { path: path.join(dir, 'badpq') })).rejects.toThrow(`${dir}/badpq/train.parquet row 2: "messages" is empty`);
    await expect(rows('chat', { path: path.join(dir, 'nowhere') })).rejects.toThrow(/nowhere: no such file or folder \(dataset\.hf\.path\)/);
  });

  it('prompt_completion and tulu3 chat formats', async () => {
    const f = bindFormat('chat', 'prompt_completion', {});
    expect(f.map({ prompt: 'p', completion: 'c' }, 'x row 1')).toEqual([u('p'), a('c')]);
    expect(bindFormat('chat', 'tulu3', {}).trainOnWhat).toBe('last_assistant_message');
  });

  it('preference adapters follow the reference recipes', () => {
    const hhh = bindFormat('preference', 'hhh', {});
    expect(parseHhhConversation('\n\nHuman: hi\n\nAssistant: yo\n\nHuman: more')).toEqual([u('hi'), a('yo'), u('more')]);
    expect(hhh.map({ chosen: 'Human: q Assistant: good', rejected: 'Human: q Assistant: bad' }, 'r')).toEqual({
      comparison: { prompt_conversation: [u('q')], completion_A: [a('good')], completion_B: [a('bad')] },
      label: 'A',
    });
    expect(hhh.map({ chosen: 'Human: q Assistant: x', rejected: 'Human: other Assistant: y' }, 'r')).toEqual({ skip: 'chosen and rejected differ elsewhere than the last message' });
    const hs3 = bindFormat('preference', 'helpsteer3', {});
    const row = { context: [u('q')], response1: 'one', response2: 'two' };
    expect(hs3.map({ ...row, overall_preference: 2 }, 'r')).toMatchObject({ label: 'B' });
    expect(hs3.map({ ...row, overall_preference: -1 }, 'r')).toMatchObject({ label: 'A' });
    expect(hs3.map({ ...row, overall_preference: 0 }, 'r')).toEqual({ skip: 'a tie (overall_preference 0)' });
    expect(() => hs3.map({ ...row, context: [{ role: 'robot', content: 'x' }], overall_preference: 1 }, 'f row 4')).toThrow('f row 4: "prompt_conversation": message 0 role "robot"');
    const tulu = bindFormat('preference', 'tulu3_preference', {});
    expect(tulu.map({ prompt: 'q', chosen: [u('q'), a('g')], rejected: [u('q'), a('b')] }, 'r')).toMatchObject({ comparison: { completion_A: [a('g')], completion_B: [a('b')] } });
    const arena = bindFormat('preference', 'arena', {});
    const conv = (t: string) => [{ role: 'user', content: [{ type: 'text', text: 'q' }] }, { role: 'assistant', content: [{ type: 'text', text: t }] }];
    expect(arena.map({ winner: 'model_b', conversation_a: conv('x'), conversation_b: conv('y') }, 'r')).toMatchObject({ label: 'B', comparison: { completion_B: [a('y')] } });
    expect(arena.map({ winner: 'tie', conversation_a: conv('x'), conversation_b: conv('y') }, 'r')).toEqual({ skip: 'winner is "tie"' });
  });

  it('int64 columns arrive as numbers (helpsteer3 overall_preference from Arrow)', async () => {
    const f = writeArrow(path.join(dir, 'hs3/train.arrow'), [{ context: [u('q')], response1: 'one', response2: 'two', overall_preference: -2 }], 'stream', { context: 'messages', overall_preference: 'int' });
    const loaded = await rows('preference', { path: path.dirname(f), format: 'helpsteer3' });
    expect(loaded.rows[0].value.label).toBe('A');
  });
});

describe('streaming', () => {
  it('numpy Generator draws match numpy 2.4 (integers via Lemire, shuffle, HF epoch seeds)', () => {
    // Goldens from numpy 2.4.6: default_rng(0).integers(0, 7, size=10); default_rng(5).integers(0, 3, size=1000)[-5:]
    // then .integers(0, 3, size=3); default_rng(s).integers(0, 2**63); default_rng(7).shuffle(list(range(10))).
    const g0 = new NumpyGenerator(0);
    expect(Array.from({ length: 10 }, () => g0.integer32(7))).toEqual([5, 4, 3, 1, 2, 0, 0, 0, 1, 5]);
    const g5 = new NumpyGenerator(5);
    expect(Array.from({ length: 1000 }, () => g5.integer32(3)).slice(-5)).toEqual([1, 2, 2, 1, 1]);
    expect(Array.from({ length: 3 }, () => g5.integer32(3))).toEqual([0, 0, 0]);
    expect(new NumpyGenerator(0).integer64(1n << 63n)).toBe(5874934615388537135n);
    expect(new NumpyGenerator(42).integer64(1n << 63n)).toBe(7138484576005690180n);
    const x = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    new NumpyGenerator(7).shuffle(x);
    expect(x).toEqual([8, 0, 7, 1, 3, 6, 2, 4, 5, 9]);
    expect([effectiveSeed(0, 0), effectiveSeed(0, 1), effectiveSeed(0, 2)]).toEqual([0n, 5874934615388537134n, 5874934615388537133n]);
  });

  it('a buffer at least as large as the data shuffles it like numpy permutation', async () => {
    async function* count(n: number) {
      for (let i = 0; i < n; i++) yield i;
    }
    const out: number[] = [];
    for await (const x of shuffleBuffer(count(50), 64, 3n)) out.push(x);
    expect(out).toEqual(numpyPermutation(3, 50));
  });

  it('streams every row once per epoch, deterministically, and replays any batch', async () => {
    const build = () => buildChatDatasets({ hf: { path: noRobots, streaming: true, shuffle_buffer_size: 4 }, batch_size: 2, shuffle_seed: 1 }, 'tiny-qwen3');
    const [one, two] = [await build(), await build()];
    expect(one.train.length).toBe(5);
    const order = async (ds: typeof one.train, epoch: number, batches = [0, 1, 2, 3, 4]) => {
      const seen: string[] = [];
      ds.setEpoch(epoch);
      for (const b of batches) {
        await ds.loadBatch!(b);
        seen.push(...ds.getBatch(b).map((d) => JSON.stringify(d.model_input)));
      }
      return seen;
    };
    const first = await order(one.train, 0);
    expect(new Set(first).size).toBe(10);
    expect(await order(two.train, 0)).toEqual(first);
    const second = await order(one.train, 1);
    expect(new Set(second)).toEqual(new Set(first));
    expect(second).not.toEqual(first);
    // Going back (a retried step) replays the stream: batch 1 of epoch 0 again.
    expect(await order(one.train, 0, [3, 1])).toEqual([...first.slice(6, 8), ...first.slice(2, 4)]);
    one.train.setEpoch(0);
    expect(() => one.train.getBatch(4)).toThrow(/batch 4 of epoch 0 is not loaded/);
  });

  it('holds out the first test_size rows in file order when streaming without test_split', async () => {
    const { train, test } = await buildChatDatasets({ hf: { path: noRobots, streaming: true }, batch_size: 4, test_size: 2 }, 'tiny-qwen3');
    expect(train.length).toBe(2);
    expect(test!.getBatch(0)).toHaveLength(2);
  });
});

describe('end to end', () => {
  it('buildChatDatasets: hf train and test splits', async () => {
    const { train, test } = await buildChatDatasets({ hf: { path: noRobots, test_split: 'test', format: 'no_robots' }, batch_size: 4 }, 'tiny-qwen3');
    expect(train.length).toBe(2);
    train.setEpoch(0);
    expect(train.getBatch(1)).toHaveLength(4);
    expect(test!.getBatch(0)).toHaveLength(2);
    await expect(buildChatDatasets({ hf: { path: noRobots }, builtin: 'example_chat_small', batch_size: 4 } as never, 'tiny-qwen3')).rejects.toThrow(/set exactly one of file_path, builtin, hf and sources/);
  });

  it('buildPreferenceDatasets: HHH rows from parquet, malformed pairs skipped', async () => {
    const hhhRows = [0, 1, 2, 3, 4].map((i) => ({ chosen: `Human: q${i}\n\nAssistant: good ${i}`, rejected: `Human: q${i}\n\nAssistant: bad ${i}` }));
    hhhRows.push({ chosen: 'Human: a Assistant: x', rejected: 'Human: b Assistant: y' });
    writeParquet(path.join(dir, 'hh-rlhf/train.parquet'), hhhRows);
    const built = await buildPreferenceDatasets({ hf: { path: path.join(dir, 'hh-rlhf'), format: 'hhh' }, batch_size: 2, test_size: 1 }, 'tiny-qwen3');
    expect(built.train.length).toBe(2);
    built.train.setEpoch(0);
    const batch = built.train.getBatch(0);
    expect(batch.datums).toHaveLength(4);
    expect(built.test!.getBatch(0).datums).toHaveLength(2);
    const streamed = await buildPreferenceDatasets({ hf: { path: path.join(dir, 'hh-rlhf'), format: 'hhh', streaming: true, shuffle_buffer_size: 2 }, batch_size: 3 }, 'tiny-qwen3');
    streamed.train.setEpoch(0);
    await streamed.train.loadBatch(0);
    await streamed.train.loadBatch(1);
    const all = [streamed.train.getBatch(0), streamed.train.getBatch(1)];
    // 6 rows in 2 batches of 3: the 5 well-formed pairs, and the malformed one reported as filtered.
    expect(all.flatMap((b) => b.lines).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(all.flatMap((b) => b.filtered)).toEqual([`${path.join(dir, 'hh-rlhf')}/train.parquet row 6: chosen and rejected differ elsewhere than the last message`]);
  });

  it('buildRLDatasets: gsm8k from a Hub-layout folder with config and test split', async () => {
    const built = await buildRLDatasets({ kind: 'gsm8k', hf: { path: gsm8k, name: 'main', test_split: 'test' }, batch_size: 2, group_size: 2 }, 'tiny-qwen3');
    expect(built.train.length).toBe(2);
    expect(built.test!.length).toBe(1);
  });
});

describe('Hub ids', () => {
  const closedPort = async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const { port } = s.address() as AddressInfo;
    await new Promise((r) => s.close(r));
    return port;
  };

  it('an unreachable Hub fails with the dataset id and says to pass a local folder', async () => {
    const cacheRoot = path.join(dir, 'cache-unreachable');
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const hub = new HubDataset('HuggingFaceH4/no_robots', 'main', { endpoint, cacheRoot, offline: false });
    await expect(hub.splitFiles(null, 'train')).rejects.toThrow(
      new RegExp(`cannot reach the Hugging Face Hub at ${endpoint} to list the files of Hugging Face dataset "HuggingFaceH4/no_robots" \\(revision main\\) \\(ECONNREFUSED\\); .*set dataset\\.hf\\.path to that local folder instead`),
    );
    expect(existsSync(cacheRoot)).toBe(false);
  });

  it('through the config: HF_ENDPOINT is honoured and the error names the id', async () => {
    const saved = { endpoint: process.env.HF_ENDPOINT, cache: process.env.DURABLE_COOKBOOK_HF_CACHE, offline: process.env.HF_HUB_OFFLINE };
    process.env.HF_ENDPOINT = `http://127.0.0.1:${await closedPort()}`;
    process.env.DURABLE_COOKBOOK_HF_CACHE = path.join(dir, 'cache-env');
    delete process.env.HF_HUB_OFFLINE;
    try {
      await expect(buildChatDatasets({ hf: { path: 'HuggingFaceH4/no_robots' }, batch_size: 2 }, 'tiny-qwen3')).rejects.toThrow(/"HuggingFaceH4\/no_robots".*local folder/);
      process.env.HF_HUB_OFFLINE = '1';
      await expect(splitFiles(src({ path: 'HuggingFaceH4/no_robots' }), 'train')).rejects.toThrow(/HF_HUB_OFFLINE is set and Hugging Face dataset "HuggingFaceH4\/no_robots" \(revision main\) is not in the cache/);
    } finally {
      for (const [k, v] of [['HF_ENDPOINT', saved.endpoint], ['DURABLE_COOKBOOK_HF_CACHE', saved.cache], ['HF_HUB_OFFLINE', saved.offline]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  describe('a fake Hub on 127.0.0.1', () => {
    let server: Server;
    let endpoint: string;
    const requests: Array<{ url: string; auth?: string }> = [];
    const repo = path.join(dir, 'hub-repo');
    noRobotsFolder(repo);
    const files = ['README.md', 'data/train-00000-of-00002.parquet', 'data/train-00001-of-00002.parquet', 'data/test-00000-of-00001.parquet'];

    beforeAll(async () => {
      server = createServer((req, res) => {
        requests.push({ url: req.url!, auth: req.headers.authorization });
        if (req.url === '/api/datasets/org/robots/revision/main') {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ id: 'org/robots', sha: 'abc', siblings: files.map((rfilename) => ({ rfilename })) }));
          return;
        }
        const m = /^\/datasets\/org\/robots\/resolve\/main\/(.+)$/.exec(req.url!);
        if (m && files.includes(decodeURIComponent(m[1]))) {
          res.end(readFileSync(path.join(repo, decodeURIComponent(m[1]))));
          return;
        }
        res.statusCode = 404;
        res.end('not found');
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise((r) => server.close(r)));

    it('lists, downloads the split into the cache (no partial files), then works offline', async () => {
      const cacheRoot = path.join(dir, 'cache-fake');
      const online = await new HubDataset('org/robots', 'main', { endpoint, cacheRoot, token: 'hf_secret', offline: false }).splitFiles(null, 'train');
      expect(online.map((f) => f.displayPath)).toEqual(['org/robots/data/train-00000-of-00002.parquet', 'org/robots/data/train-00001-of-00002.parquet']);
      expect(requests.map((r) => r.url)).toEqual(['/api/datasets/org/robots/revision/main', '/datasets/org/robots/resolve/main/data/train-00000-of-00002.parquet', '/datasets/org/robots/resolve/main/data/train-00001-of-00002.parquet']);
      expect(requests.every((r) => r.auth === 'Bearer hf_secret')).toBe(true);
      const cached = path.join(cacheRoot, 'org', 'robots', 'main', 'data');
      expect(readdirSync(cached).sort()).toEqual(['train-00000-of-00002.parquet', 'train-00001-of-00002.parquet']);
      const offline = await new HubDataset('org/robots', 'main', { endpoint: 'http://127.0.0.1:9', cacheRoot, offline: true }).splitFiles(null, 'train');
      expect(offline.map((f) => f.absPath)).toEqual(online.map((f) => f.absPath));
      await expect(new HubDataset('org/robots', 'main', { endpoint, cacheRoot, offline: true }).splitFiles(null, 'test')).rejects.toThrow(/HF_HUB_OFFLINE is set and data\/test-00000-of-00001\.parquet of Hugging Face dataset "org\/robots"/);
      await expect(new HubDataset('org/missing', 'main', { endpoint, cacheRoot, offline: false }).splitFiles(null, 'train')).rejects.toThrow(/no such dataset or revision on the Hub/);
    });
  });
});
