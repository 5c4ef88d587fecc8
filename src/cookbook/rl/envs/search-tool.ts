// Search-R1 (reference 0.6.1 recipes/search_tool): the policy answers a question with a `search`
// tool over a corpus and ends with "Answer: <one to five words>", graded by normalised exact match
// (search-answer.ts). The reference searches a Chroma store of Wikipedia with Gemini embeddings;
// here the tool ranks a corpus file (by default the shipped sample, data/search_tool/) with BM25,
// and keeps the reference's tool name, schema, description and result text. Each search is a side
// effect recorded once under its position (durableToolCalls), so a retried rollout reads it back.
import path from 'node:path';
import { z } from 'zod';
import { ConfigurationError, DataFormatError } from '../../errors.js';
import { pyShuffled } from '../../python-random.js';
import { Bm25Index } from '../../retrieval/bm25.js';
import type { Message, Renderer, ToolSpec } from '../../renderers/types.js';
import { buildAgentToolEnv, durableToolCalls, simpleToolResult, tool, toolDeclaring, type Tool } from '../../tool-use/index.js';
import type { ContextualEnvGroupBuilder, RolloutContext } from '../rollout-context.js';
import { BaseEnvGroupBuilder, type Env, type EnvGroupBuilder, type RLDataset } from '../types.js';
import { parseEnvArgs } from './args.js';
import { readJsonlRows } from './jsonl-rows.js';
import { textAnswerReward } from './search-answer.js';

export const SEARCH_TASK_INSTRUCTIONS = `You are an expert assistant who solves tasks using a Wikipedia search tool.

Here are instructions for how to solve a problem:
1. Think step by step before calling the tool and after you receive the result of the tool call. Decide what queries to call the tool with.
2. Call the tool with the queries you have decided on.
3. Think step by step again after you receive the result of the tool call. If you have the information you need, you can stop here.
4. Otherwise, come up with new queries that combine information from the previous results.
5. Include your final answer after the "Answer:" prefix. The answer should be one to five words.

Here is an example of solving a real question:
"What was the population of San Francisco in the year that New York City first recorded a census population above seven million?"

1. Think step by step: In order to answer this question, I first need to find the census year in which New York City's population first exceeded seven million. I will search for New York City's historical census populations.
2. Calling search tool: <tool_call>{"name": "search", "arguments": {"query_list": ["New York City historical population census"]}}</tool_call> (Output omitted for brevity)
3. Think step by step again: The 1930 census recorded 6,930,446 people and the 1940 census recorded 7,454,995, so 1940 was the first census above seven million. Now I need the population of San Francisco in 1940. I will search for it.
<tool_call>{"name": "search", "arguments": {"query_list": ["San Francisco population 1940 census"]}}</tool_call> (Output omitted for brevity)
4. Answer: 634,536
`;

export const SEARCH_CORPUS_PATH = 'data/search_tool/corpus.jsonl';

/** A SearchR1Datum: the question, its gold answers and where it comes from (the logging tag). */
export interface SearchDatum {
  question: string;
  answer: string[];
  data_source: string;
}

const DatumSchema = z.object({ question: z.string().min(1), answer: z.array(z.string()), data_source: z.string().min(1) });
const PassageSchema = z.object({ id: z.string().optional(), title: z.string(), text: z.string() });

export function loadSearchData(file: string, shownAs: string): SearchDatum[] {
  return readJsonlRows(file, shownAs, DatumSchema);
}

/** A corpus with its index; documents read as Search-R1's wiki passages do: `"Title"\ntext`. */
export class SearchCorpus {
  readonly index: Bm25Index;
  constructor(readonly documents: readonly string[]) {
    this.index = new Bm25Index(documents);
  }

  static fromPassages(passages: ReadonlyArray<{ title: string; text: string }>): SearchCorpus {
    return new SearchCorpus(passages.map((p) => `"${p.title}"\n${p.text}`));
  }

  /** The `n` best documents per query. */
  query(queries: readonly string[], n: number): string[][] {
    return queries.map((q) => this.index.search(q, n).map((hit) => this.documents[hit.doc]));
  }
}

// One index per corpus file and process: every group of every step shares it, as the reference's
// groups share one ChromaTool.
const corpora = new Map<string, SearchCorpus>();
export function loadSearchCorpus(file: string, shownAs: string): SearchCorpus {
  let corpus = corpora.get(file);
  if (!corpus) corpora.set(file, (corpus = SearchCorpus.fromPassages(readJsonlRows(file, shownAs, PassageSchema))));
  return corpus;
}

/** ChromaTool.search's name, schema and result text, over `corpus`. */
export function searchTool(corpus: SearchCorpus, nResults = 3): Tool {
  return tool({
    name: 'search',
    description: 'Search Wikipedia for relevant information based on the given query.',
    parameters: z.object({
      query_list: z.array(z.string()).describe('A list of fully-formed semantic queries. The tool will return search results for each query.'),
    }),
    run: ({ query_list }) => {
      // The reference's embedding call refuses these before searching; the refusal becomes the tool's error message.
      if (query_list.length === 0) throw new Error('No texts provided for embedding generation');
      query_list.forEach((q, i) => {
        if (q.trim() === '') throw new Error(`Text at index ${i} is empty or whitespace only`);
      });
      let content = '';
      corpus.query(query_list, nResults).forEach((docs, i) => {
        content += `Query: ${query_list[i]}\n`;
        docs.forEach((doc, j) => (content += `Document ${j + 1}:\n${doc}\n`));
      });
      return simpleToolResult(content);
    },
  });
}

export function searchInitialMessages(renderer: Renderer, search: Tool, question: string): Message[] {
  const r = toolDeclaring(renderer, 'search_tool');
  return [...r.createConversationPrefixWithTools([search.toSpec()], SEARCH_TASK_INSTRUCTIONS), { role: 'user', content: question }];
}

export interface SearchEnvOptions {
  maxTurns: number;
  formatCoef: number;
  maxTrajectoryTokens: number | null;
  maxGenerationTokens: number | null;
  contextOverflowReward: number;
  nResults: number;
}

/** One episode: the question, the search tool and the answer grade; tool calls through `ctx.once` when given. */
export function buildSearchEnv(renderer: Renderer, corpus: SearchCorpus, datum: SearchDatum, opts: SearchEnvOptions, durable?: { ctx: RolloutContext; episode: number }): Env {
  const search = searchTool(corpus, opts.nResults);
  return buildAgentToolEnv(renderer, [search], searchInitialMessages(renderer, search, datum.question), textAnswerReward(datum.answer, opts.formatCoef), {
    maxTurns: opts.maxTurns,
    maxTrajectoryTokens: opts.maxTrajectoryTokens,
    maxGenerationTokens: opts.maxGenerationTokens,
    contextOverflowReward: opts.contextOverflowReward,
    toolCallRunner: durable && durableToolCalls(durable.ctx.once, durable.episode),
  });
}

export class SearchEnvGroupBuilder extends BaseEnvGroupBuilder implements ContextualEnvGroupBuilder {
  private episodes = 0;
  constructor(
    readonly renderer: Renderer,
    readonly corpus: SearchCorpus,
    readonly datum: SearchDatum,
    readonly groupSize: number,
    readonly opts: SearchEnvOptions,
    private readonly ctx: RolloutContext | null = null,
  ) {
    super();
  }

  withContext(ctx: RolloutContext): EnvGroupBuilder {
    return new SearchEnvGroupBuilder(this.renderer, this.corpus, this.datum, this.groupSize, this.opts, ctx);
  }

  async makeEnvs(): Promise<Env[]> {
    const ctx = this.ctx;
    return Array.from({ length: this.groupSize }, () => {
      const episode = this.episodes++;
      return buildSearchEnv(this.renderer, this.corpus, this.datum, this.opts, ctx ? { ctx, episode } : undefined);
    });
  }

  override loggingTags(): string[] {
    return [this.datum.data_source];
  }
}

export class SearchRLDataset implements RLDataset {
  constructor(
    readonly renderer: Renderer,
    readonly corpus: SearchCorpus,
    readonly data: readonly SearchDatum[],
    readonly batchSize: number,
    readonly groupSize: number,
    readonly opts: SearchEnvOptions,
  ) {}
  get length(): number {
    return Math.floor(this.data.length / this.batchSize);
  }
  getBatch(index: number): EnvGroupBuilder[] {
    return this.data.slice(index * this.batchSize, (index + 1) * this.batchSize).map((d) => new SearchEnvGroupBuilder(this.renderer, this.corpus, d, this.groupSize, this.opts));
  }
}

/** Up to `k` data per source (the reference's offline-eval sample), sources in order of first appearance. */
export function sampleEachSource(data: readonly SearchDatum[], k: number, seed: number): SearchDatum[] {
  const bySource = new Map<string, SearchDatum[]>();
  for (const d of data) {
    if (!bySource.has(d.data_source)) bySource.set(d.data_source, []);
    bySource.get(d.data_source)!.push(d);
  }
  return [...bySource.values()].flatMap((items) => (items.length <= k ? items : pyShuffled(items, seed).slice(0, k)));
}

export const SearchToolArgsSchema = z.strictObject({
  batch_size: z.int().positive(),
  group_size: z.int().positive(),
  max_turns: z.int().positive().default(5),
  format_coef: z.number().default(0.1),
  max_trajectory_tokens: z.int().positive().nullable().default(32 * 1024),
  max_generation_tokens: z.int().positive().nullable().default(null),
  context_overflow_reward: z.number().default(-0.1),
  n_results: z.int().positive().default(3),
  seed: z.int().default(0),
  /** JSONL of {"title", "text"} passages, relative to the repository root. */
  corpus_file: z.string().min(1).default(SEARCH_CORPUS_PATH),
  /** JSONL of {"question", "answer": [...], "data_source"}, relative to the repository root. */
  train_file: z.string().min(1).default('data/search_tool/train.jsonl'),
  /** The held-out questions evaluated every `eval_every` steps (the offline eval's sample); null: none. */
  test_file: z.string().min(1).nullable().default('data/search_tool/test.jsonl'),
  max_eval_samples: z.int().positive().default(100),
  test_group_size: z.int().positive().default(1),
});

export function buildSearchToolDatasets(args: Record<string, unknown>, renderer: Renderer, repoRoot: string): { train: RLDataset; test?: RLDataset } {
  const a = parseEnvArgs(SearchToolArgsSchema, args, 'search_tool');
  const corpus = loadSearchCorpus(path.resolve(repoRoot, a.corpus_file), a.corpus_file);
  const train = pyShuffled(loadSearchData(path.resolve(repoRoot, a.train_file), a.train_file), a.seed);
  if (a.batch_size > train.length) throw new ConfigurationError(`dataset.args.batch_size: ${a.batch_size} exceeds the ${train.length} questions of ${a.train_file}`);
  const opts: SearchEnvOptions = {
    maxTurns: a.max_turns,
    formatCoef: a.format_coef,
    maxTrajectoryTokens: a.max_trajectory_tokens,
    maxGenerationTokens: a.max_generation_tokens,
    contextOverflowReward: a.context_overflow_reward,
    nResults: a.n_results,
  };
  const test = a.test_file === null ? [] : sampleEachSource(loadSearchData(path.resolve(repoRoot, a.test_file), a.test_file), a.max_eval_samples, a.seed);
  return {
    train: new SearchRLDataset(renderer, corpus, train, a.batch_size, a.group_size, opts),
    test: test.length ? new SearchRLDataset(renderer, corpus, test, test.length, a.test_group_size, opts) : undefined,
  };
}
