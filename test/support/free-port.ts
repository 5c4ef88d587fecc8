// Servers in tests bind 127.0.0.1 on ports that were free a moment before they start.
import { freePort, type Service } from '../../src/cli/services.js';

/**
 * Starts a server on a port free a moment ago. Another process can take that port before the
 * server binds it (an outgoing connection's ephemeral port, another test's server): the server
 * then exits before it is ready, and is started again on another port.
 */
export async function onFreePort<O extends { port: number }, S extends Service>(opts: Omit<O, 'port'>, start: (opts: O) => Promise<S>): Promise<{ opts: O; service: S }> {
  for (let attempt = 1; ; attempt++) {
    const withPort = { ...opts, port: await freePort() } as O;
    try {
      return { opts: withPort, service: await start(withPort) };
    } catch (err) {
      if (attempt >= 3 || !/exited \(.*\) before it was ready/.test(String(err))) throw err;
    }
  }
}
