#!/usr/bin/env node
// The store daemon's own entry, `cookbook capture serve` without loading the rest of the CLI (the
// Temporal client, the workers): what ensureCaptureStore starts, so a run or `serve --capture` waits
// half as long for its store. Arguments are those of `cookbook capture serve`.
import { exitIfUnsupportedNode } from '../../stack/node-version.mjs';

exitIfUnsupportedNode();
const { register } = await import('tsx/esm/api');
register();
const { captureCommand } = await import('../cli.ts');
process.exit(await captureCommand(['serve', ...process.argv.slice(2)]));
