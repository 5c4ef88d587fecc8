// Errors in the Messages API's shape: `{"type": "error", "error": {"type", "message"}}`, the type
// following the HTTP status as Anthropic's does (its SDKs pick the exception class by status).
// The server's errors are made once (errors.ts) and worded here for this API.
import type { ApiError } from '../errors.js';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
}

function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

export function anthropicErrorBody(err: ApiError): AnthropicErrorBody {
  // Agent harnesses (Claude Code, opencode) compact their history on this wording.
  const message = err.code === 'context_length_exceeded' ? `prompt is too long: ${err.message}` : err.message;
  return { type: 'error', error: { type: errorType(err.status), message } };
}
