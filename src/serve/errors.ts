// Errors in the OpenAI API's shape: `{error: {message, type, param, code}}` with the HTTP status
// its clients map to exception classes (400 BadRequestError, 401 AuthenticationError, 404
// NotFoundError, …). Everything a request can get wrong ends here, never in a crashed server.
import { BackendError } from '../backends/types.js';
import { CookbookError } from '../cookbook/errors.js';
import { OpenAIFormatError } from '../cookbook/renderers/openai-format.js';

export type ApiErrorType = 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'server_error';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: ApiErrorType = 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  body(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export const badRequest = (message: string, param: string | null = null, code: string | null = 'invalid_value') =>
  new ApiError(400, message, 'invalid_request_error', param, code);

/** An OpenAI parameter this server understands but cannot honour with the given value. */
export const unsupported = (param: string, why: string) => badRequest(`${param}: ${why}`, param, 'unsupported_parameter');

/**
 * Any error thrown while serving a request, as the ApiError the client gets: the backend's own
 * refusals (a bad sampling request) are the caller's fault (400), an unreachable backend is 503,
 * a renderer that cannot render the conversation is 400, anything else is a 500 that names it.
 */
export function toApiError(err: unknown, backendUrl: string): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof BackendError) {
    if (err.kind === 'bad_request') return badRequest(`the sampling backend refused the request: ${err.message}`, null, null);
    if (err.kind === 'transport' || err.kind === 'timeout') {
      return new ApiError(503, `the sampling backend at ${backendUrl} is unreachable: ${err.message}`, 'server_error', null, 'backend_unavailable');
    }
    return new ApiError(502, `the sampling backend at ${backendUrl} failed: ${err.message}`, 'server_error', null, 'backend_error');
  }
  if (err instanceof OpenAIFormatError) return badRequest(err.message, err.param, err.code);
  if (err instanceof CookbookError) return badRequest(err.message, 'messages', 'invalid_messages');
  return new ApiError(500, `internal error: ${(err as Error)?.message ?? String(err)}`, 'server_error', null, null);
}
