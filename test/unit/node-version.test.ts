// The Node.js floor the CLI checks at start (src/stack/node-version.mjs).
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIN_NODE_VERSION, nodeVersionProblem } from '../../src/stack/node-version.mjs';

describe('nodeVersionProblem', () => {
  it('accepts the floor and anything newer, with or without a leading v', () => {
    for (const v of [MIN_NODE_VERSION, '20.9.1', '20.20.2', 'v20.10.0', '21.0.0', '22.3.0', '24.1.0', '100.0.0']) expect(nodeVersionProblem(v), v).toBeUndefined();
  });

  it('refuses older versions, saying what is needed and what was found', () => {
    for (const v of ['20.8.9', '20.0.0', '18.19.0', 'v16.20.2', '8.0.0']) {
      expect(nodeVersionProblem(v), v).toMatch(new RegExp(`needs Node\\.js >= ${MIN_NODE_VERSION.replace(/\./g, '\\.')}; this is ${v.replace(/^v/, '').replace(/\./g, '\\.')} `));
    }
  });

  it('passes on the Node running this test (the project supports it)', () => {
    expect(nodeVersionProblem()).toBeUndefined();
  });

  const module = resolve(import.meta.dirname, '../../src/stack/node-version.mjs');
  const exitCheck = (arg: string) =>
    spawnSync(process.execPath, ['--input-type=module', '-e', `import { exitIfUnsupportedNode } from ${JSON.stringify(module)}; exitIfUnsupportedNode(${arg}); console.log('went on');`], { encoding: 'utf8' });

  it('exitIfUnsupportedNode returns quietly on a supported Node', () => {
    const r = exitCheck('');
    expect([r.status, r.stdout.trim(), r.stderr]).toEqual([0, 'went on', '']);
  });

  it('exitIfUnsupportedNode exits 1 with the message on an old one', () => {
    const r = exitCheck("'18.19.0'");
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`durable-cookbook needs Node.js >= ${MIN_NODE_VERSION}; this is 18.19.0`);
  });
});
