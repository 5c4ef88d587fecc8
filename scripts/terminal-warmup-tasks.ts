// Generated warm-up tasks for scripts/gen-terminal-sft.ts: small shell chores in /app (count, sort,
// filter, rename, fix a line of a script…), drawn from a few families with Python's
// random.Random(seed) so the file they make is reproducible. They teach the tool-call format on
// hundreds of short, varied calls; none is one of the shipped tasks, so the tasks an RL config
// holds out stay unseen.
import { PythonRandom, randbelow } from '../src/cookbook/python-random.js';

export interface WarmupTask {
  name: string;
  instruction: string;
  /** Files under /app before the first command (path → content). */
  files: Record<string, string>;
  /** Optional look before acting (`cat`/`head` of an input). */
  look: string | null;
  /** The commands that do the chore. */
  commands: string[];
  /** Exits 0 once the chore is done (and not before: gen-terminal-sft.ts checks both). */
  check: string;
  /** Shows the result after the chore, where a careful engineer would look. */
  verify: string | null;
}

const int = (rng: PythonRandom, lo: number, hi: number) => lo + randbelow(rng, hi - lo + 1);
const pick = <T>(rng: PythonRandom, xs: readonly T[]): T => xs[randbelow(rng, xs.length)];
const WORDS = ['apple', 'river', 'stone', 'cloud', 'maple', 'tiger', 'lemon', 'orbit', 'pixel', 'delta', 'ember', 'frost', 'grape', 'harbor', 'ivory', 'jasper', 'kettle', 'lunar', 'meadow', 'nectar', 'olive', 'pepper', 'quartz', 'raven', 'saddle', 'timber', 'umber', 'velvet', 'willow', 'zephyr'];
const STEMS = ['notes', 'data', 'items', 'names', 'words', 'log', 'list', 'input', 'records', 'report'];
const NAMES = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', 'judy', 'mallory', 'oscar', 'peggy', 'trent', 'victor', 'wendy'];
const word = (rng: PythonRandom) => pick(rng, WORDS);
const lines = (rng: PythonRandom, n: number, each: (rng: PythonRandom) => string) => Array.from({ length: n }, () => each(rng));
const text = (ls: string[]) => ls.join('\n') + '\n';
const wordsFile = (rng: PythonRandom) => `/app/${pick(rng, STEMS)}.txt`;
const equals = (path: string, expected: string) => `printf '%s' ${shq(expected)} | cmp -s - ${path}`;
const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const distinct = (rng: PythonRandom, n: number, from: readonly string[]) => {
  const out: string[] = [];
  while (out.length < n) {
    const w = pick(rng, from);
    if (!out.includes(w)) out.push(w);
  }
  return out;
};

type Family = (rng: PythonRandom) => Omit<WarmupTask, 'name'>;

const FAMILIES: Record<string, Family> = {
  'count-lines': (rng) => {
    const file = wordsFile(rng);
    const ls = lines(rng, int(rng, 3, 12), word);
    const out = pick(rng, ['/app/count.txt', '/app/line_count.txt', '/app/lines.txt']);
    return {
      instruction: `Count the lines of \`${file}\` and write the number (digits only) to \`${out}\`.\n`,
      files: { [file]: text(ls) },
      look: null,
      commands: [`wc -l < ${file} > ${out}`],
      check: equals(out, `${ls.length}\n`),
      verify: `cat ${out}`,
    };
  },
  uppercase: (rng) => {
    const file = wordsFile(rng);
    const ls = lines(rng, int(rng, 2, 6), (r) => `${word(r)} ${word(r)}`);
    const out = pick(rng, ['/app/upper.txt', '/app/shout.txt']);
    return {
      instruction: `Write the contents of \`${file}\` in upper case to \`${out}\`.\n`,
      files: { [file]: text(ls) },
      look: `cat ${file}`,
      commands: [`tr a-z A-Z < ${file} > ${out}`],
      check: equals(out, text(ls.map((l) => l.toUpperCase()))),
      verify: `cat ${out}`,
    };
  },
  'make-dirs': (rng) => {
    const dir = `/app/${distinct(rng, int(rng, 2, 3), WORDS).join('/')}`;
    return {
      instruction: `Create the directory \`${dir}\` (with any missing parents).\n`,
      files: { '/app/README': 'workspace\n' },
      look: null,
      commands: [`mkdir -p ${dir}`],
      check: `test -d ${dir}`,
      verify: `ls -R /app`,
    };
  },
  'write-line': (rng) => {
    const name = pick(rng, NAMES);
    const file = `/app/${pick(rng, ['greeting', 'hello', 'message'])}.txt`;
    const line = `${pick(rng, ['hello', 'hi', 'welcome'])} ${name}`;
    return {
      instruction: `Create \`${file}\` holding the single line \`${line}\`.\n`,
      files: { '/app/README': 'workspace\n' },
      look: null,
      commands: [`echo '${line}' > ${file}`],
      check: equals(file, `${line}\n`),
      verify: `cat ${file}`,
    };
  },
  copy: (rng) => {
    const [a, b] = distinct(rng, 2, STEMS);
    const ls = lines(rng, int(rng, 2, 5), word);
    return {
      instruction: `Copy \`/app/${a}.txt\` to \`/app/${b}.bak\`, keeping the original.\n`,
      files: { [`/app/${a}.txt`]: text(ls) },
      look: null,
      commands: [`cp /app/${a}.txt /app/${b}.bak`],
      check: `cmp -s /app/${a}.txt /app/${b}.bak`,
      verify: `ls /app`,
    };
  },
  rename: (rng) => {
    const [a, b] = distinct(rng, 2, STEMS);
    const ext = pick(rng, ['txt', 'csv', 'log']);
    return {
      instruction: `Rename \`/app/${a}.${ext}\` to \`/app/${b}.${ext}\`.\n`,
      files: { [`/app/${a}.${ext}`]: text(lines(rng, 3, word)) },
      look: null,
      commands: [`mv /app/${a}.${ext} /app/${b}.${ext}`],
      check: `test -f /app/${b}.${ext} && test ! -e /app/${a}.${ext}`,
      verify: `ls /app`,
    };
  },
  sort: (rng) => {
    const file = wordsFile(rng);
    const ls = distinct(rng, int(rng, 4, 9), WORDS);
    const reverse = randbelow(rng, 3) === 0;
    const out = '/app/sorted.txt';
    return {
      instruction: `Sort the lines of \`${file}\` ${reverse ? 'in reverse alphabetical order' : 'alphabetically'} and write them to \`${out}\`.\n`,
      files: { [file]: text(ls) },
      look: `cat ${file}`,
      commands: [`sort ${reverse ? '-r ' : ''}${file} > ${out}`],
      check: equals(out, text([...ls].sort().map((_, i, s) => (reverse ? s[s.length - 1 - i] : s[i])))),
      verify: `cat ${out}`,
    };
  },
  'unique-lines': (rng) => {
    const file = `/app/${pick(rng, ['visitors', 'names', 'users'])}.txt`;
    const ls = lines(rng, int(rng, 6, 12), (r) => pick(r, NAMES.slice(0, 6)));
    return {
      instruction: `Write the distinct lines of \`${file}\`, sorted, one per line, to \`/app/unique.txt\`.\n`,
      files: { [file]: text(ls) },
      look: `cat ${file}`,
      commands: [`sort -u ${file} > /app/unique.txt`],
      check: equals('/app/unique.txt', text([...new Set(ls)].sort())),
      verify: `cat /app/unique.txt`,
    };
  },
  grep: (rng) => {
    const file = `/app/${pick(rng, ['app', 'server', 'worker'])}.log`;
    const level = pick(rng, ['ERROR', 'WARN']);
    const ls = lines(rng, int(rng, 5, 10), (r) => `${pick(r, ['INFO', 'INFO', 'ERROR', 'WARN'])} ${word(r)} ${word(r)}`);
    ls[int(rng, 0, ls.length - 1)] = `${level} ${word(rng)} failed`;
    const out = `/app/${level.toLowerCase()}s.txt`;
    return {
      instruction: `Write the lines of \`${file}\` that contain \`${level}\` to \`${out}\`, in their original order.\n`,
      files: { [file]: text(ls) },
      look: `head ${file}`,
      commands: [`grep ${level} ${file} > ${out}`],
      check: equals(out, text(ls.filter((l) => l.includes(level)))),
      verify: `cat ${out}`,
    };
  },
  'head-tail': (rng) => {
    const file = wordsFile(rng);
    const ls = lines(rng, int(rng, 6, 12), word);
    const k = int(rng, 1, 4);
    const first = randbelow(rng, 2) === 0;
    const out = first ? '/app/first.txt' : '/app/last.txt';
    return {
      instruction: `Write the ${first ? 'first' : 'last'} ${k} line${k > 1 ? 's' : ''} of \`${file}\` to \`${out}\`.\n`,
      files: { [file]: text(ls) },
      look: null,
      commands: [`${first ? 'head' : 'tail'} -n ${k} ${file} > ${out}`],
      check: equals(out, text(first ? ls.slice(0, k) : ls.slice(-k))),
      verify: `cat ${out}`,
    };
  },
  replace: (rng) => {
    const file = `/app/${pick(rng, ['config', 'settings', 'site'])}.${pick(rng, ['txt', 'conf', 'ini'])}`;
    const [from, to] = distinct(rng, 2, WORDS);
    const ls = lines(rng, int(rng, 3, 6), (r) => `${word(r)} = ${from}`);
    return {
      instruction: `In \`${file}\`, replace every \`${from}\` with \`${to}\`, editing the file in place.\n`,
      files: { [file]: text(ls) },
      look: `cat ${file}`,
      commands: [`sed -i 's/${from}/${to}/g' ${file}`],
      check: equals(file, text(ls.map((l) => l.replaceAll(from, to)))),
      verify: `cat ${file}`,
    };
  },
  delete: (rng) => {
    const [keep, drop] = distinct(rng, 2, STEMS);
    return {
      instruction: `Delete \`/app/${drop}.tmp\`; leave \`/app/${keep}.txt\` as it is.\n`,
      files: { [`/app/${keep}.txt`]: text(lines(rng, 2, word)), [`/app/${drop}.tmp`]: 'scratch\n' },
      look: null,
      commands: [`rm /app/${drop}.tmp`],
      check: `test ! -e /app/${drop}.tmp && test -f /app/${keep}.txt`,
      verify: `ls /app`,
    };
  },
  sum: (rng) => {
    const file = `/app/${pick(rng, ['numbers', 'amounts', 'scores'])}.txt`;
    const ns = lines(rng, int(rng, 3, 8), (r) => String(int(r, 1, 99)));
    return {
      instruction: `\`${file}\` holds one integer per line. Write their sum to \`/app/sum.txt\`.\n`,
      files: { [file]: text(ns) },
      look: `cat ${file}`,
      commands: [`awk '{ s += $1 } END { print s }' ${file} > /app/sum.txt`],
      check: equals('/app/sum.txt', `${ns.reduce((s, n) => s + Number(n), 0)}\n`),
      verify: `cat /app/sum.txt`,
    };
  },
  executable: (rng) => {
    const script = `/app/${pick(rng, ['run', 'build', 'deploy', 'start'])}.sh`;
    return {
      instruction: `Make \`${script}\` executable, then run it and save what it prints to \`/app/output.txt\`.\n`,
      files: { [script]: `#!/bin/sh\necho ${word(rng)} ${int(rng, 1, 9)}\n` },
      look: `cat ${script}`,
      commands: [`chmod +x ${script}`, `${script} > /app/output.txt`],
      check: `test -x ${script} && ${script} | cmp -s - /app/output.txt`,
      verify: `cat /app/output.txt`,
    };
  },
  concat: (rng) => {
    const [a, b] = distinct(rng, 2, STEMS);
    return {
      instruction: `Write \`/app/${a}.txt\` followed by \`/app/${b}.txt\` to \`/app/all.txt\`.\n`,
      files: { [`/app/${a}.txt`]: text(lines(rng, int(rng, 1, 3), word)), [`/app/${b}.txt`]: text(lines(rng, int(rng, 1, 3), word)) },
      look: null,
      commands: [`cat /app/${a}.txt /app/${b}.txt > /app/all.txt`],
      check: `cat /app/${a}.txt /app/${b}.txt | cmp -s - /app/all.txt`,
      verify: `cat /app/all.txt`,
    };
  },
  'run-python': (rng) => {
    const script = `/app/${pick(rng, ['main', 'report', 'compute', 'hello'])}.py`;
    const a = int(rng, 2, 20);
    const b = int(rng, 2, 20);
    return {
      instruction: `Run \`${script}\` with python3 and save its output to \`/app/result.txt\`.\n`,
      files: { [script]: `print(${a} * ${b})\n` },
      look: `cat ${script}`,
      commands: [`python3 ${script} > /app/result.txt`],
      check: equals('/app/result.txt', `${a * b}\n`),
      verify: `cat /app/result.txt`,
    };
  },
  'fix-script': (rng) => {
    const script = `/app/${pick(rng, ['total', 'area', 'price'])}.py`;
    const [a, b] = [int(rng, 2, 30), int(rng, 2, 30)];
    return {
      instruction: `\`${script}\` should print the sum of ${a} and ${b}, but it subtracts. Fix it so it adds.\n`,
      files: { [script]: `a = ${a}\nb = ${b}\nprint(a - b)\n` },
      look: `cat ${script}`,
      commands: [`sed -i 's/a - b/a + b/' ${script}`],
      check: `test "$(python3 ${script})" = ${a + b}`,
      verify: `python3 ${script}`,
    };
  },
  'count-words': (rng) => {
    const file = wordsFile(rng);
    const ls = lines(rng, int(rng, 2, 5), (r) => lines(r, int(r, 1, 4), word).join(' '));
    const n = ls.reduce((s, l) => s + l.split(' ').length, 0);
    return {
      instruction: `Write the number of words in \`${file}\` (digits only) to \`/app/word_count.txt\`.\n`,
      files: { [file]: text(ls) },
      look: null,
      commands: [`wc -w < ${file} > /app/word_count.txt`],
      check: equals('/app/word_count.txt', `${n}\n`),
      verify: `cat /app/word_count.txt`,
    };
  },
  'find-ext': (rng) => {
    const ext = pick(rng, ['md', 'py', 'json']);
    const names = distinct(rng, int(rng, 3, 6), WORDS);
    const files: Record<string, string> = {};
    names.forEach((n, i) => (files[`/app/docs/${i % 2 ? 'sub/' : ''}${n}.${i % 3 === 2 ? 'txt' : ext}`] = `${n}\n`));
    const expected = Object.keys(files).filter((f) => f.endsWith(`.${ext}`)).sort();
    return {
      instruction: `List every \`.${ext}\` file under \`/app/docs\` (full paths, sorted, one per line) in \`/app/found.txt\`.\n`,
      files,
      look: `ls -R /app/docs`,
      commands: [`find /app/docs -name '*.${ext}' | sort > /app/found.txt`],
      check: expected.length ? equals('/app/found.txt', text(expected)) : 'false',
      verify: `cat /app/found.txt`,
    };
  },
  'csv-column': (rng) => {
    const file = `/app/${pick(rng, ['people', 'staff', 'members'])}.csv`;
    const rows = distinct(rng, int(rng, 3, 6), NAMES).map((n) => `${n},${int(rng, 18, 70)}`);
    return {
      instruction: `\`${file}\` has the header \`name,age\`. Write the name column (without the header) to \`/app/names.txt\`.\n`,
      files: { [file]: text(['name,age', ...rows]) },
      look: `head -n 3 ${file}`,
      commands: [`tail -n +2 ${file} | cut -d, -f1 > /app/names.txt`],
      check: equals('/app/names.txt', text(rows.map((r) => r.split(',')[0]))),
      verify: `cat /app/names.txt`,
    };
  },
};

export const WARMUP_FAMILIES = Object.keys(FAMILIES);

/** `count` tasks cycling through the families, each drawn from random.Random(seed). */
export function warmupTasks(count: number, seed = 0): WarmupTask[] {
  const rng = new PythonRandom(seed);
  return Array.from({ length: count }, (_, i) => {
    const family = WARMUP_FAMILIES[i % WARMUP_FAMILIES.length];
    return { name: `${family}-${Math.floor(i / WARMUP_FAMILIES.length)}`, ...FAMILIES[family](rng) };
  });
}
