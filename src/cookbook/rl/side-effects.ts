// Side effects of a rollout beyond sampling — a tool call, a sandbox run, a search — happen once
// (DESIGN §3.9): each is recorded in the run store under its logical position before the rollout
// uses it, and a retried rollout activity reads the record instead of acting again. A rollout
// recomputed after a crash samples the same turns (its seeds come from the same position), so with
// the recorded results it is bitwise the trajectory of an uninterrupted run.
import type { RunStore } from '../run-store.js';

/**
 * `act` once per `key` within a rollout: the recorded value when there is one for the same
 * `request` (what was asked, e.g. a tool's name and arguments), else `act()`, recorded before it is
 * returned. A different request at the same key means the rollout took another path (a sampler
 * that is not deterministic): the new request acts and its record replaces the old one.
 */
export type Once = (<T>(key: ReadonlyArray<string | number>, request: string, act: () => Promise<T>) => Promise<T>) & {
  /** Where the records go (`side_effects/<position>`), for logs that name a record; absent when nothing is recorded. */
  readonly position?: string;
};

/** Acts every time: rollouts outside a run (tests, ad-hoc evaluation). */
export const actAlways: Once = (_key, _request, act) => act();

interface SideEffectRecord {
  format: 'side_effect/v1';
  request: string;
  value: unknown;
}

/** Records under `side_effects/<position>/<key>.json` of the run store; `position` names the group rollout. */
export function runStoreOnce(store: RunStore, position: ReadonlyArray<string | number>): Once {
  const dir = `side_effects/${position.join('_')}`;
  const once = async <T>(key: ReadonlyArray<string | number>, request: string, act: () => Promise<T>): Promise<T> => {
    const path = `${dir}/${key.join('_')}.json`;
    if (store.hasBlob(path)) {
      const record = JSON.parse(store.readBlob(path).toString('utf8')) as SideEffectRecord;
      if (record.format === 'side_effect/v1' && record.request === request) return record.value as T;
    }
    const value = await act();
    store.writeBlob(path, JSON.stringify({ format: 'side_effect/v1', request, value } satisfies SideEffectRecord));
    return value;
  };
  return Object.assign(once, { position: dir });
}
