// How a stateful sandbox reads and writes files with shell commands, as the reference's
// ModalSandbox does (its read_file and write_file), shared by the local and Docker episode sandboxes.
import { posix } from 'node:path';

export const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** read_file: `head -c max_bytes path`, or `cat path`. */
export function readFileCommand(path: string, maxBytes?: number | null): string {
  return maxBytes != null ? `head -c ${maxBytes} ${shQuote(path)}` : `cat ${shQuote(path)}`;
}

/** write_file: `mkdir -p dir && cat > path [&& chmod +x path]`, the content going in on stdin. */
export function writeFileCommand(path: string, executable = false): string {
  const cmd = `mkdir -p ${shQuote(posix.dirname(path))} && cat > ${shQuote(path)}`;
  return executable ? `${cmd} && chmod +x ${shQuote(path)}` : cmd;
}
