// Public API of sandboxed code execution (reference 0.6.1 sandbox/__init__.py, plus the local sandbox).
export * from './types.js';
export * from './sandboxfusion.js';
export { LocalSandbox, type LocalSandboxOptions } from './local.js';
export { startSandboxServer, type SandboxServer } from './server.js';
