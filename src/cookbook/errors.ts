// Error classes named after the reference's `tinker_cookbook.exceptions`, so messages and
// `instanceof` checks read the same way in both code bases.

export class CookbookError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Invalid configuration (e.g. an unknown LR schedule). */
export class ConfigurationError extends CookbookError {}

export class DataError extends CookbookError {}

/** Input data does not have the expected shape (e.g. a JSONL row without "messages"). */
export class DataFormatError extends DataError {}

/** Data has the right shape but cannot be used (e.g. fewer than 2 tokens). */
export class DataValidationError extends DataError {}

/** A renderer cannot render or parse what it was given. */
export class RendererError extends CookbookError {}

/**
 * A service a rollout needs is out of reach for now (the sandbox server, after its client's retries).
 * Tools and graders let it through rather than answer with an error, so nothing is recorded as the
 * call's result: the rollout fails, retryably, and runs again once the service is back.
 */
export class ServiceUnavailableError extends CookbookError {}
