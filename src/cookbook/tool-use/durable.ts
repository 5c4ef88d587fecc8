// Tool calls that happen once per logical position (DESIGN §3.9): the env's ToolCallRunner backed by
// the rollout's side-effect record, keyed by (episode, turn, call) within the group rollout whose
// position (step, group, attempt) the record already carries.
import type { Once } from '../rl/side-effects.js';
import type { ToolCallRunner } from './agent-tool-env.js';

export function durableToolCalls(once: Once, episode: number): ToolCallRunner {
  return (call, { turn, index }, run) => once(['tool', `episode_${episode}`, `turn_${turn}`, `call_${index}`], `${call.function.name}(${call.function.arguments})`, run);
}
