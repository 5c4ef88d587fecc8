// Where the CLI finds Temporal and the engine: flags win, then TEMPORAL_ADDRESS / TINKER_BASE_URL,
// then the local stack's defaults.
import { Client, Connection } from '@temporalio/client';

export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';
export const DEFAULT_ENGINE_PORT = 8100;
export const DEFAULT_ENGINE_URL = `http://127.0.0.1:${DEFAULT_ENGINE_PORT}`;

export interface GlobalFlags {
  address?: string;
  namespace?: string;
  engineUrl?: string;
  taskQueue?: string;
}

export const temporalAddress = (f: GlobalFlags) => f.address ?? process.env.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS;
export const engineUrl = (f: GlobalFlags) => f.engineUrl ?? process.env.TINKER_BASE_URL ?? DEFAULT_ENGINE_URL;
export const namespace = (f: GlobalFlags) => f.namespace ?? process.env.TEMPORAL_NAMESPACE ?? 'default';

export async function connectClient(f: GlobalFlags): Promise<Client> {
  const address = temporalAddress(f);
  try {
    const connection = await Connection.connect({ address, connectTimeout: '5s' });
    return new Client({ connection, namespace: namespace(f) });
  } catch (err) {
    throw new Error(`cannot reach Temporal at ${address} (${(err as Error).message}); start the local stack with \`npx cookbook dev\` or set TEMPORAL_ADDRESS`);
  }
}
