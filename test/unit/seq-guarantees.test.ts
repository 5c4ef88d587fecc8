// How the worker learns what a server guarantees about seq_id when its capabilities say nothing:
// the probe's three answers (backends/seq-guarantees.ts). Servers as seen on the wire: our engine
// answers a resend with the original, SkyRL-tx 0.3 runs it again, TuFT 0.2 refuses it (409).
import { describe, expect, it } from 'vitest';
import { seqIdGuaranteesOf } from '../../src/backends/seq-guarantees.js';
import { BackendError, type TrainingBackend, type TrainingSession } from '../../src/backends/types.js';

type OnResend = 'original' | 'again' | 'conflict';

function server(onResend: OnResend): { backend: TrainingBackend; session: TrainingSession } {
  const seen = new Map<number, string>();
  let n = 0;
  const forward = async (_d: unknown, _l: unknown, { seqId }: { seqId: number }) => {
    const prior = seen.get(seqId);
    if (prior && onResend === 'conflict') throw new BackendError(`Sequence conflict: expected ${seqId + 1}, got ${seqId}`, 409, 'forward', {}, 'conflict');
    const id = prior && onResend === 'original' ? prior : `req-${++n}`;
    seen.set(seqId, id);
    return { seqIds: [seqId], requestIds: [id], result: async () => ({ loss_fn_outputs: [], metrics: {} }) };
  };
  return { backend: {} as TrainingBackend, session: { modelId: 'm', forward } as unknown as TrainingSession };
}

describe('the seq_id probe', () => {
  for (const [onResend, want] of [
    ['original', { ordered: true, deduplicated: true }],
    ['again', { ordered: false, deduplicated: false }],
    ['conflict', { ordered: true, deduplicated: false }],
  ] as const) {
    it(`a resend answered ${onResend === 'original' ? 'with the original' : onResend === 'again' ? 'by running it again' : 'with a 409 conflict'}`, async () => {
      const { backend, session } = server(onResend);
      const { guarantees, seqIdsUsed } = await seqIdGuaranteesOf(backend, session, 1);
      expect(guarantees).toEqual({ ...want, source: 'probe' });
      expect(seqIdsUsed).toBe(1);
      // known once per backend: the next model is not probed
      expect((await seqIdGuaranteesOf(backend, session, 1)).seqIdsUsed).toBe(0);
    });
  }
});
