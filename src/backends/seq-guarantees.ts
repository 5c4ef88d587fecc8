// What a server guarantees about seq_id, learned once per server (per backend client, which a
// worker keeps one of per server URL). The Tinker protocol runs a model's training requests in
// seq_id order and answers a resent seq_id with the original request; some servers (SkyRL-tx 0.3)
// do neither. A server may say so in its capabilities (`seq_id_guarantees`, as the local engine
// does); one that says nothing is probed once, on the model being created: the same forward
// request (no effect on weights) sent twice under one seq_id. A server that deduplicates answers
// the resend with the original request id; one that ignores seq_id starts a second request.
// The probe shows dedupe only: a server that deduplicates by seq_id is taken to order by it too
// (the protocol asks both of a server, and none is known that does one without the other).
import { z } from 'zod';
import { BackendError, type Datum, type TrainingBackend, type TrainingSession } from './types.js';

export interface SeqIdGuarantees {
  /** A model's requests run in seq_id order, whatever order they arrive in. */
  ordered: boolean;
  /** A request resent under a seq_id already used is answered by the original, not run again. */
  deduplicated: boolean;
  /** Where this was learned: the server's capabilities, or the probe. */
  source: 'capabilities' | 'probe';
}

/** A backend whose server may state its guarantees (TinkerBackend; fakes need not). */
export interface StatesSeqIdGuarantees {
  statedSeqIdGuarantees?(): Promise<{ ordered: boolean; deduplicated: boolean } | undefined>;
}

export const honoursSeqId = (g: Pick<SeqIdGuarantees, 'ordered' | 'deduplicated'>): boolean => g.ordered && g.deduplicated;

const known = new WeakMap<object, Promise<SeqIdGuarantees>>();

/** Two tokens any vocabulary has; the probe's loss is never used. */
const PROBE_DATUM: Datum = {
  model_input: { chunks: [{ type: 'encoded_text', tokens: [1, 2] }] },
  loss_fn_inputs: { target_tokens: { data: [2, 3], dtype: 'int64' }, weights: { data: [1, 1], dtype: 'float32' } },
};

/**
 * Sends the same forward twice under `seqId` (one seq id of `session`'s model) and compares the
 * answers. A server that refuses the resend as out of sequence (TuFT 0.2: 409 "Sequence conflict")
 * checks the order but cannot answer a resend: a step whose outcome is unknown must not be resent
 * there either.
 */
async function probe(session: TrainingSession, seqId: number): Promise<SeqIdGuarantees> {
  const first = await session.forward([PROBE_DATUM], 'cross_entropy', { seqId });
  await first.result();
  let again;
  try {
    again = await session.forward([PROBE_DATUM], 'cross_entropy', { seqId });
    await again.result();
  } catch (err) {
    if (err instanceof BackendError && err.kind === 'conflict') return { ordered: true, deduplicated: false, source: 'probe' };
    throw err;
  }
  const deduplicated = !!first.requestIds?.length && first.requestIds[0] === again.requestIds?.[0];
  return { ordered: deduplicated, deduplicated, source: 'probe' };
}

/**
 * The server's guarantees, with the seq ids of `session`'s model this call consumed (1 when it
 * probed on that model from `seqId`, else 0). Known once per backend; a failed probe is forgotten.
 */
export async function seqIdGuaranteesOf(backend: TrainingBackend & StatesSeqIdGuarantees, session: TrainingSession, seqId: number): Promise<{ guarantees: SeqIdGuarantees; seqIdsUsed: number }> {
  const cached = known.get(backend);
  if (cached) return { guarantees: await cached, seqIdsUsed: 0 };
  let seqIdsUsed = 0;
  const learning = (async (): Promise<SeqIdGuarantees> => {
    const stated = await backend.statedSeqIdGuarantees?.().catch(() => undefined);
    if (stated) return { ordered: stated.ordered, deduplicated: stated.deduplicated, source: 'capabilities' };
    seqIdsUsed = 1;
    return probe(session, seqId);
  })();
  known.set(backend, learning);
  try {
    return { guarantees: await learning, seqIdsUsed };
  } catch (err) {
    known.delete(backend);
    throw err;
  }
}

/** The part of get_server_capabilities that states the guarantees (absent: the server says nothing). */
export const StatedSeqIdGuarantees = z
  .object({ seq_id_guarantees: z.object({ ordered: z.boolean(), deduplicated: z.boolean() }).loose().nullish() })
  .loose();
