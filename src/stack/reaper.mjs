// Stops the process groups of a parent's services when the parent dies without stopping them (a
// killed test runner, a crashed CLI). The parent adds and removes groups over the IPC channel; the
// channel closing is the parent's death, noticed at once, whatever killed it.
const groups = new Set();
process.on('message', (m) => {
  if (m?.add) groups.add(m.add);
  if (m?.remove) groups.delete(m.remove);
});
process.on('disconnect', () => {
  const signal = (sig) => {
    for (const g of groups) {
      try {
        process.kill(-g, sig);
      } catch {
        groups.delete(g); // already gone
      }
    }
  };
  signal('SIGTERM');
  if (groups.size === 0) process.exit(0);
  setTimeout(() => {
    signal('SIGKILL');
    process.exit(0);
  }, 5000);
});
process.send({ ready: true });
