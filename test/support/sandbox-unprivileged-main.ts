// One local-sandbox run in a process of its own, for tests that start it as a user the kernel
// refuses cgroups to: prints {lines, response} (what the sandbox logged, its answer) as JSON.
//   node --import tsx test/support/sandbox-unprivileged-main.ts '<python code>'
import { LocalSandbox } from '../../src/cookbook/sandbox/local.js';

const lines: string[] = [];
const sandbox = new LocalSandbox({ log: (line) => lines.push(line) });
const [, response] = await sandbox.run(process.argv[2], {}, 30);
console.log(JSON.stringify({ lines, response }));
