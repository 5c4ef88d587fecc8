// `cookbook chat`: a multi-turn conversation with one model in the terminal. At a terminal each line
// you type is a turn, `/reset` starts over, `/exit` or Ctrl-D ends it; the model's reasoning is shown
// dimmed above its answer. With piped input (no TTY) every non-empty line is the next user turn of
// one conversation; answers go to stdout, one turn per block, and reasoning goes to stderr, so
// `… | cookbook chat M > answers.txt` keeps only the answers.
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { ChatMessageIn } from './requests.js';
import { completeChat } from './chat-completion.js';
import { toApiError } from './errors.js';
import type { ServedModel } from './served-model.js';

export interface ChatOptions {
  model: ServedModel;
  system?: string;
  maxTokens: number;
  temperature?: number;
  seed?: number;
  input: Readable;
  output: Writable;
  errors: Writable;
  /** Interactive (prompt, colours, commands) rather than line-per-turn batch mode. */
  interactive: boolean;
}

const DIM = '\x1b[2m';
const RESET = '\x1b[0m';

/** Runs the conversation until the input ends; resolves to the number of turns that failed. */
export async function runChat(o: ChatOptions): Promise<number> {
  const initial: ChatMessageIn[] = o.system ? [{ role: 'system', content: o.system }] : [];
  let history = [...initial];
  let failures = 0;
  const rl = createInterface({ input: o.input, output: o.interactive ? o.output : undefined, terminal: o.interactive });
  const prompt = () => {
    if (o.interactive) rl.prompt();
  };
  if (o.interactive) {
    rl.on('SIGINT', () => rl.close()); // Ctrl-C ends the chat (readline would otherwise only pause)
    rl.setPrompt('you> ');
    o.output.write(`chatting with ${o.model.id} (renderer ${o.model.renderer.name}); /reset starts over, /exit or Ctrl-D ends\n`);
    prompt();
  }
  for await (const raw of rl) {
    const line = raw.trim();
    if (!line) {
      prompt();
      continue;
    }
    if (o.interactive && line === '/exit') break;
    if (o.interactive && line === '/reset') {
      history = [...initial];
      o.output.write('(conversation reset)\n');
      prompt();
      continue;
    }
    const turn: ChatMessageIn[] = [...history, { role: 'user', content: line }];
    try {
      const result = await completeChat(o.model, { model: o.model.id, messages: turn, max_tokens: o.maxTokens, temperature: o.temperature, seed: o.seed }, { defaultMaxTokens: o.maxTokens });
      const { message, finish_reason } = result.choices[0];
      if (message.reasoning_content) {
        if (o.interactive) o.output.write(`${DIM}${message.reasoning_content}${RESET}\n`);
        else o.errors.write(`[thinking] ${message.reasoning_content}\n`);
      }
      const calls = (message.tool_calls ?? []).map((c) => `[tool call] ${c.function.name}(${c.function.arguments})`);
      const answer = [message.content ?? '', ...calls].filter(Boolean).join('\n');
      o.output.write(o.interactive ? `${answer}${finish_reason === 'length' ? `\n${DIM}(cut at ${o.maxTokens} tokens)${RESET}` : ''}\n` : `${answer}\n\n`);
      // The answer joins the history as the renderer parsed it (reasoning kept; renderers drop it from history as their format does).
      history = [...turn, { role: 'assistant', content: message.content ?? '', ...(message.reasoning_content ? { reasoning_content: message.reasoning_content } : {}), ...(message.tool_calls ? { tool_calls: message.tool_calls } : {}) }];
    } catch (err) {
      failures++;
      o.errors.write(`error: ${toApiError(err, o.model.baseUrl).message}\n`);
    }
    prompt();
  }
  rl.close();
  return failures;
}
