// The Node.js the CLI, the worker and the scripts need, checked before anything else loads (plain
// JavaScript, so that it runs even where the TypeScript loader cannot). The floor is what the code
// that runs needs, not the highest `engines` any dependency declares:
//   - sharp, which @huggingface/transformers imports on load (tokenizers), declares >= 20.9.0;
//   - bin/cookbook.mjs registers tsx through module.register (20.6), the SDK declares >= 20.3.
// vega-lite (>= 22) and @cortex-js/compute-engine (>= 22.3) declare more, but what the project
// uses of them runs on Node 20: vega-lite's compile() uses no Node 22 API, and compute-engine only
// feature-tests process.getBuiltinModule (22.3) for its interactive prompt. Every suite passes on
// Node 20 (CI's); npm's EBADENGINE warnings for those two packages are expected there.
export const MIN_NODE_VERSION = '20.9.0';

const parse = (v) => String(v).replace(/^v/, '').split('.').map((n) => Number.parseInt(n, 10) || 0);

/** Why `version` cannot run the project, or undefined when it can. */
export function nodeVersionProblem(version = process.versions.node) {
  const [a, b, c] = parse(version);
  const [x, y, z] = parse(MIN_NODE_VERSION);
  const ok = a !== x ? a > x : b !== y ? b > y : c >= z;
  if (ok) return undefined;
  return `durable-cookbook needs Node.js >= ${MIN_NODE_VERSION}; this is ${String(version).replace(/^v/, '')} (${process.execPath}). Install Node 20.9 or newer (20 LTS, 22, 24), e.g. with nvm: nvm install 20`;
}

/** Exits with the problem on stderr when this Node (or `version`) is too old; returns otherwise. */
export function exitIfUnsupportedNode(version = process.versions.node) {
  const problem = nodeVersionProblem(version);
  if (!problem) return;
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
