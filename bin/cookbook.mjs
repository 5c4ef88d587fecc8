#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so no build step stands between a clone and a run. The Node
// version is checked first, before anything that needs a newer one loads (hence dynamic imports).
import { exitIfUnsupportedNode } from '../src/stack/node-version.mjs';

exitIfUnsupportedNode();
const { register } = await import('tsx/esm/api');
register();
await import('../src/cli/main.ts');
