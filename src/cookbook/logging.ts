// Structured logs through pino: JSON lines on stderr for the process, and per run into the run
// directory's logs.log. Secrets never reach a log line: known secret-looking fields are redacted.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pino, { type Logger } from 'pino';

const REDACT = { paths: ['apiKey', 'api_key', '*.apiKey', '*.api_key', 'headers["x-api-key"]', 'headers["X-API-Key"]'], censor: '[redacted]' };

export const log: Logger = pino({ level: process.env.LOG_LEVEL ?? 'info', redact: REDACT, base: { pid: process.pid } }, pino.destination(2));

const runLoggers = new Map<string, Logger>();

/** A logger that writes to stderr and appends to the run's logs.log. */
export function runLogger(logFile: string, bindings: Record<string, unknown> = {}): Logger {
  let logger = runLoggers.get(logFile);
  if (!logger) {
    mkdirSync(dirname(logFile), { recursive: true });
    logger = pino(
      { level: process.env.LOG_LEVEL ?? 'info', redact: REDACT, base: { pid: process.pid } },
      pino.multistream([{ stream: pino.destination(2) }, { stream: pino.destination({ dest: logFile, append: true, sync: true }) }]),
    );
    runLoggers.set(logFile, logger);
  }
  return logger.child(bindings);
}
