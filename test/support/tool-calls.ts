// The tool calls an RL run's rollouts made, read back from its run store: each call and result as
// the trajectory logged them, the record durableToolCalls kept of it, and the text of the
// observation that followed. For tests that check real rollouts' calls against the tool itself.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deserializeTrajectoryGroup } from '../../src/cookbook/rl/serialize.js';
import type { Trajectory } from '../../src/cookbook/rl/types.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import type { Tokenizer } from '../../src/cookbook/tokenizer.js';

export interface LoggedToolCall {
  step: number;
  /** The group's index in its batch. */
  group: number;
  episode: number;
  turn: number;
  /** `name(arguments)`, as the env logs it. */
  call: string;
  result: string;
  /** What the run store recorded as the call's result (undefined: no record). */
  recorded: string | undefined;
  /** The decoded observation after the call's turn; null when the episode ended there. */
  nextObservation: string | null;
}

export interface RolloutToolCalls {
  steps: number[];
  episodes: number;
  /** Episodes whose first turn made a parsed tool call. */
  firstTurnCalls: number;
  calls: LoggedToolCall[];
  /** Every episode's trajectory, with its position, for checks of their own. */
  trajectories: Array<{ step: number; group: number; episode: number; trajectory: Trajectory }>;
}

const obText = (tok: Tokenizer, t: Trajectory['transitions'][number]) =>
  tok.decode(t.ob.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : [])), { skipSpecialTokens: false });

export function rolloutToolCalls(rlDir: string, tok: Tokenizer): RolloutToolCalls {
  const store = new RunStore(rlDir);
  const records = store.readRolloutRecords();
  const sideEffects = join(rlDir, '.cookbook', 'store', 'side_effects');
  const out: RolloutToolCalls = { steps: records.map((r) => r.step), episodes: 0, firstTurnCalls: 0, calls: [], trajectories: [] };
  for (const record of records) {
    for (const g of record.groups) {
      const group = deserializeTrajectoryGroup(store.readBlob(g.ref).toString('utf8'));
      // The group rollout's tool-call records: side_effects/<step>_<group>_<attempt>/tool_episode_*.json.
      const [step, groupIndex] = g.ref.match(/batch_(\d+)\/group_(\d+)/)!.slice(1).map(Number);
      const recordDir = readdirSync(sideEffects).find((d) => d.startsWith(`${step}_${groupIndex}_`));
      const recorded = new Map<string, string>();
      for (const f of recordDir ? readdirSync(join(sideEffects, recordDir)).filter((f) => f.startsWith('tool_episode_')) : []) {
        recorded.set(f, JSON.parse(readFileSync(join(sideEffects, recordDir!, f), 'utf8')).value.messages[0].content);
      }
      for (const [e, traj] of group.trajectoriesG.entries()) {
        out.episodes += 1;
        out.trajectories.push({ step, group: groupIndex, episode: e, trajectory: traj });
        if (traj.transitions[0].logs.tool_call_0 !== undefined) out.firstTurnCalls += 1;
        for (const [t, tr] of traj.transitions.entries()) {
          for (let i = 0; tr.logs[`tool_call_${i}`] !== undefined; i++) {
            const next = traj.transitions[t + 1];
            out.calls.push({
              step,
              group: groupIndex,
              episode: e,
              turn: t,
              call: String(tr.logs[`tool_call_${i}`]),
              result: String(tr.logs[`tool_result_${i}`]),
              recorded: recorded.get(`tool_episode_${e}_turn_${t + 1}_call_${i}.json`),
              nextObservation: next ? obText(tok, next) : null,
            });
          }
        }
      }
    }
  }
  return out;
}
