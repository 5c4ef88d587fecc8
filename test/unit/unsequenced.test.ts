// The rules a model on a server that ignores seq_id is held to (src/activities/unsequenced.ts): its
// requests one at a time, and no forward_backward or optim_step from a retried attempt. The
// session underneath is an in-process recorder: what is checked is the order of the calls made to
// it. (On a real server: test/workflows/sl-unsequenced-crash.test.ts.)
import { ApplicationFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { heldToSeqRules } from '../../src/activities/unsequenced.js';
import { ErrorTypes, type ModelRef } from '../../src/activities/types.js';
import type { Submitted, TrainingSession } from '../../src/backends/types.js';

function recorder(): { session: TrainingSession; calls: string[] } {
  const calls: string[] = [];
  const submit = (what: string) => async (): Promise<Submitted<unknown>> => {
    calls.push(`submit ${what}`);
    let result: Promise<unknown> | undefined;
    return {
      seqIds: 1,
      result: () => (result ??= new Promise((r) => setTimeout(r, 5)).then(() => void calls.push(`result ${what}`))),
    };
  };
  const session = { modelId: 'm', forward: submit('forward'), forwardBackward: submit('forward_backward'), optimStep: submit('optim_step') };
  return { session: session as unknown as TrainingSession, calls };
}

const ignoring: ModelRef = { modelId: 'm', nextSeqId: 1, seqIdIgnored: true };
const step = async (s: TrainingSession) => {
  const fb = await s.forwardBackward([], 'cross_entropy', { seqId: 1 });
  const optim = await s.optimStep({ learning_rate: 1e-3 }, { seqId: 2 });
  await Promise.all([fb.result(), optim.result()]);
};

describe('a model on a server that ignores seq_id', () => {
  it('is left as it is when its server orders and deduplicates', () => {
    const { session } = recorder();
    expect(heldToSeqRules(session, { modelId: 'm', nextSeqId: 1 })).toBe(session);
  });

  it('sends its optim_step only once the forward_backward before it has its result', async () => {
    const plain = recorder();
    await new MockActivityEnvironment({ attempt: 1 }).run(step, plain.session);
    expect(plain.calls).toEqual(['submit forward_backward', 'submit optim_step', 'result forward_backward', 'result optim_step']);

    const held = recorder();
    await new MockActivityEnvironment({ attempt: 1 }).run(step, heldToSeqRules(held.session, ignoring));
    expect(held.calls).toEqual(['submit forward_backward', 'result forward_backward', 'submit optim_step', 'result optim_step']);
  });

  it('refuses to send a step from a retried attempt (StepOutcomeUnknown), but still evaluates', async () => {
    const { session, calls } = recorder();
    const held = heldToSeqRules(session, ignoring);
    const failure = await new MockActivityEnvironment({ attempt: 2 }).run(step, held).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).type).toBe(ErrorTypes.stepOutcomeUnknown);
    expect((failure as ApplicationFailure).nonRetryable).toBe(true);
    expect(calls).toEqual([]);
    await new MockActivityEnvironment({ attempt: 2 }).run(async (s: TrainingSession) => (await s.forward([], 'cross_entropy', { seqId: 1 })).result(), held);
    expect(calls).toEqual(['submit forward', 'result forward']);
  });
});
