// Writes data/search_tool/sft_tool_calls.jsonl: supervised warm-up transcripts for the search_tool
// recipe, so that a model that has never seen Qwen3's tool-call format (the randomly initialised
// tiny-qwen3 above all) learns to write one before agentic RL (configs/pipeline_search_tool.json).
//
//   node --import tsx scripts/gen-search-sft.ts [out-dir]     (default data/search_tool/)
//
// One conversation per training question of data/search_tool/train.jsonl, in file order, built
// from the same pieces the RL env uses, so that SFT and RL see the same tokens:
// - the system message is the Qwen3 renderer's createConversationPrefixWithTools for the env's
//   `search` tool and SEARCH_TASK_INSTRUCTIONS (searchInitialMessages), then the question;
// - the assistant calls `search` with `query_list: [<the question>]` (no text around the call);
// - the tool message is what the env appends: handleToolCall on that call, i.e. the real BM25
//   result over data/search_tool/corpus.jsonl (3 documents per query);
// - a multi-hop question ("… the country whose capital is Nairobi?", "… the element with atomic
//   number 26?", "… the element with the symbol Fe?") whose gold answer the first result lacks gets
//   a second call: the question with that phrase replaced by the entity the first result names;
// - the assistant answers `Answer: <first gold answer>`, which the env's grader scores 1.
// A question whose retrieved documents do not contain its gold answer is left out (none is, with
// the shipped corpus). Deterministic: rerunning writes the same bytes
// (test/cookbook/rl/search-sft-data.test.ts checks it).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getRenderer } from '../src/cookbook/renderers/registry.js';
import type { Message, ToolCall } from '../src/cookbook/renderers/types.js';
import { normalizeAnswer } from '../src/cookbook/rl/envs/search-answer.js';
import { loadSearchCorpus, loadSearchData, searchInitialMessages, searchTool, type SearchDatum } from '../src/cookbook/rl/envs/search-tool.js';
import { getTokenizer } from '../src/cookbook/tokenizer.js';
import { handleToolCall, type Tool } from '../src/cookbook/tool-use/index.js';

const ROOT = path.join(import.meta.dirname, '..');
const OUT = path.resolve(process.argv[2] ?? path.join(ROOT, 'data', 'search_tool'));
const SFT_FILE = 'sft_tool_calls.jsonl';

const renderer = getRenderer('qwen3', await getTokenizer('tiny-qwen3'));
const corpus = loadSearchCorpus(path.join(ROOT, 'data/search_tool/corpus.jsonl'), 'data/search_tool/corpus.jsonl');
const search = searchTool(corpus); // the env's default n_results (3)
const tools = new Map<string, Tool>([[search.name, search]]);

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** The results' text mentions the answer as a whole phrase, after the grader's normalisation. */
const mentions = (text: string, answer: string) => ` ${normalizeAnswer(text)} `.includes(` ${normalizeAnswer(answer)} `);

/** The phrase of a multi-hop question that names its bridge, and how the first result resolves it. */
const BRIDGES: Array<{ phrase: RegExp; resolve: (key: string) => RegExp }> = [
  // "Nairobi is the capital city of Kenya." → Kenya
  { phrase: /the country whose capital is ([^?]+)/, resolve: (capital) => new RegExp(`${escapeRe(capital)} is the capital city of ([^.]+)\\.`) },
  // "Iron is a chemical element with the symbol Fe and atomic number 26." → iron
  { phrase: /the element with atomic number (\d+)/, resolve: (z) => new RegExp(`([A-Z][a-z]+) is a chemical element with the symbol \\w+ and atomic number ${z}\\.`) },
  { phrase: /the element with the symbol (\w+)/, resolve: (symbol) => new RegExp(`([A-Z][a-z]+) is a chemical element with the symbol ${symbol} and`) },
];

async function call(query: string): Promise<{ call: Message; result: Message }> {
  const toolCall: ToolCall = { type: 'function', function: { name: search.name, arguments: JSON.stringify({ query_list: [query] }) } };
  const { messages } = await handleToolCall(tools, toolCall);
  if (messages.length !== 1 || messages[0].role !== 'tool') throw new Error(`search(${query}) answered ${JSON.stringify(messages)}`);
  return { call: { role: 'assistant', content: '', tool_calls: [toolCall] }, result: messages[0] };
}

async function transcript(d: SearchDatum): Promise<Message[] | null> {
  const messages = searchInitialMessages(renderer, search, d.question);
  let question = d.question;
  for (let hop = 0; hop < 2; hop++) {
    const { call: c, result } = await call(question);
    messages.push(c, result);
    const text = result.content as string;
    if (mentions(text, d.answer[0])) return [...messages, { role: 'assistant', content: `Answer: ${d.answer[0]}` }];
    const bridge = BRIDGES.map((b) => ({ b, m: b.phrase.exec(question) })).find((x) => x.m);
    const entity = bridge && bridge.b.resolve(bridge.m![1]).exec(text)?.[1];
    if (!bridge || !entity) return null;
    // Lower-case element names as the questions write them ("… of iron?"); countries keep theirs.
    const name = bridge.m![0].startsWith('the element') ? entity.toLowerCase() : entity;
    question = question.replace(bridge.m![0], name);
  }
  return null;
}

const data = loadSearchData(path.join(ROOT, 'data/search_tool/train.jsonl'), 'data/search_tool/train.jsonl');
const rows: string[] = [];
const dropped: string[] = [];
for (const d of data) {
  const messages = await transcript(d);
  if (messages) rows.push(JSON.stringify({ messages }));
  else dropped.push(d.question);
}
mkdirSync(OUT, { recursive: true });
writeFileSync(path.join(OUT, SFT_FILE), rows.join('\n') + '\n');
const twoHops = rows.filter((r) => (r.match(/"tool_calls"/g) ?? []).length === 2).length;
console.log(`${rows.length} conversations (${twoHops} with two searches) in ${path.relative(process.cwd(), path.join(OUT, SFT_FILE)) || SFT_FILE}`);
if (dropped.length) console.log(`left out (answer not retrieved): ${dropped.join(' | ')}`);
