/** Renders failures in the three bodies Octavia's clients parse (WSME, pecan, keystonemiddleware). */
import type { FastifyError, FastifyReply } from 'fastify';
import { ApiError, apiError, isApiError } from '../domain/errors.js';

const titles: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
  406: 'Not Acceptable', 409: 'Conflict', 413: 'Request Entity Too Large', 415: 'Unsupported Media Type',
  500: 'Internal Server Error', 501: 'Not Implemented', 503: 'Service Unavailable',
};

export function errorBody(e: ApiError): unknown {
  if (e.code === 'UNAUTHORIZED') return { error: { code: 401, title: 'Unauthorized', message: e.message } };
  if (e.format === 'pecan') return { code: e.status, title: titles[e.status] ?? 'Error', description: e.message };
  return { faultcode: e.status >= 500 ? 'Server' : 'Client', faultstring: e.message, debuginfo: null };
}

/** Maps Fastify's own errors (body parsing, limits) onto the catalog. */
export function toApiError(e: FastifyError | Error): ApiError {
  if (isApiError(e)) return e;
  const code = (e as FastifyError).code;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return apiError('BODY_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return apiError('UNSUPPORTED_MEDIA_TYPE', (e.message.split(': ')[1] ?? '').trim());
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY': return apiError('INVALID_JSON');
    default:
      if (e instanceof SyntaxError) return apiError('INVALID_JSON');
      return apiError('INTERNAL', 'Internal Server Error');
  }
}

/** `identityUri`: where a refused client should authenticate, as keystonemiddleware says it. */
export function sendError(reply: FastifyReply, e: ApiError, identityUri: string): FastifyReply {
  if (e.code === 'UNAUTHORIZED') reply.header('WWW-Authenticate', `Keystone uri="${identityUri}"`);
  return reply.code(e.status).type('application/json').send(errorBody(e));
}
