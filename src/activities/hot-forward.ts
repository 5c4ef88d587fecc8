// `cookbook set` on a run that starts others (a sweep's points, a pipeline's running stage): the
// parent forwards the settings as an update to each child through the worker's client — a
// workflow can signal a child but not update it, and `set` must answer with what each run applied.
// Re-sending the same settings is harmless (they are absolute values), so a retried attempt is too.
import { Context } from '@temporalio/activity';
import { setUpdate, type ForwardedSet, type HotSettings } from '../workflows/shared/messages.js';

export interface HotForwardActivities {
  forwardHotSettings(input: { workflowIds: string[]; patch: Partial<HotSettings> }): Promise<ForwardedSet[]>;
}

export function hotForwardActivities(): HotForwardActivities {
  return {
    async forwardHotSettings({ workflowIds, patch }) {
      const { client } = Context.current();
      return Promise.all(
        workflowIds.map(async (workflowId): Promise<ForwardedSet> => {
          const handle = client.workflow.getHandle(workflowId);
          try {
            const r = await handle.executeUpdate(setUpdate, { args: [patch] });
            return { workflowId, fromStep: r.fromStep, ...(r.forwarded ? { forwarded: r.forwarded } : {}) };
          } catch (err) {
            // A run that ended between the parent's look and the update has nothing to change.
            const closed = await handle.describe().then((d) => d.status.name !== 'RUNNING', () => false);
            if (closed) return { workflowId, fromStep: null };
            throw err;
          }
        }),
      );
    },
  };
}
