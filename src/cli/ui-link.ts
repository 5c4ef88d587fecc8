// The Temporal Web UI link that `train`, `status`, `sweep`, `continue` and `eval` print. Only a known
// UI is linked: COOKBOOK_UI_URL when set (a cluster's or Temporal Cloud's UI, the Docker stack's),
// else the UI that `cookbook dev` recorded for the Temporal server in use. Any other server's UI is
// unknown, and no link is better than one to a UI of another server.
import type { Client } from '@temporalio/client';
import { stackAt } from './stack-state.js';

export function webUiBase(address: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.COOKBOOK_UI_URL) return env.COOKBOOK_UI_URL.replace(/\/+$/, '');
  return address ? stackAt(address, env)?.uiUrl : undefined;
}

/** The client's server address (a Connection's options; undefined for other connection kinds). */
export const clientAddress = (client: Client) => (client.connection as { options?: { address?: string } }).options?.address;

export function webUiLink(client: Client, workflowId: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const base = webUiBase(clientAddress(client), env);
  return base && `${base}/namespaces/${encodeURIComponent(client.options.namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

/** The `web UI` line after a run starts: the link, or how to get one. */
export function webUiLine(client: Client, workflowId: string): string {
  const link = webUiLink(client, workflowId);
  return link ? `web UI   ${link}` : `web UI   not known for ${clientAddress(client) ?? 'this server'} (set COOKBOOK_UI_URL to the server's Web UI to get links)`;
}
