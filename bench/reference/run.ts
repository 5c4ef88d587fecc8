// `npm run bench:reference [-- --loop sl|rl|dpo|distill|off_policy|off_policy_multi|sdft ...]`: the reference's own loop beside this
// project's workflow on one engine. sl (the default): sl.ts; the others: loops.ts.
const at = process.argv.findIndex((a) => a === '--loop' || a.startsWith('--loop='));
const loop = at === -1 ? 'sl' : process.argv[at].includes('=') ? process.argv[at].split('=')[1] : process.argv[at + 1];
if (loop === 'sl') {
  if (at !== -1) process.argv.splice(at, process.argv[at].includes('=') ? 1 : 2);
  await import('./sl.js');
} else {
  await import('./loops.js');
}
