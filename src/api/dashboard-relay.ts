/**
 * A page may only call its own origin (the dashboard's Content-Security-Policy, and browsers'
 * CORS rules, which an external Keystone or Barbican rarely opens). So where identity or the key
 * manager is external, the API process relays the dashboard's calls to them under
 * `/dashboard/identity/v3` and `/dashboard/key-manager/v1`: only to the configured service, only
 * the paths the dashboard uses, the caller's own token passed through untouched and never kept.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { apiError } from '../domain/errors.js';

export const RELAYED_IDENTITY = '/identity/v3';
export const RELAYED_KEY_MANAGER = '/key-manager/v1';

/** Request headers a relayed call keeps; everything else (cookies, the browser's own) stays here. */
const PASSED_REQUEST = ['accept', 'content-type', 'x-auth-token', 'x-subject-token'] as const;
const PASSED_RESPONSE = ['content-type', 'x-subject-token'] as const;
const RELAY_TIMEOUT_MS = 30_000;

async function relay(req: FastifyRequest, reply: FastifyReply, target: string, service: string): Promise<FastifyReply> {
  const headers: Record<string, string> = {};
  for (const h of PASSED_REQUEST) {
    const v = req.headers[h];
    if (typeof v === 'string') headers[h] = v;
  }
  const query = req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : '';
  const body = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
  let res: Response;
  try {
    res = await fetch(`${target}${query}`, { method: req.method, headers, body: body ?? null, signal: AbortSignal.timeout(RELAY_TIMEOUT_MS) });
  } catch (e) {
    throw apiError('DASHBOARD_RELAY_FAILED', service, target, (e as Error).message);
  }
  for (const h of PASSED_RESPONSE) {
    const v = res.headers.get(h);
    if (v) reply.header(h, v);
  }
  return reply.code(res.status).send(Buffer.from(await res.arrayBuffer()));
}

/** Keystone: the token calls (log in, rescope, validate, revoke) and the user's projects. */
export function relayIdentity(app: FastifyInstance, authUrl: string): void {
  const v3 = authUrl.replace(/\/+$/, '').replace(/\/v3$/, '') + '/v3';
  const to = (path: string) => async (req: FastifyRequest, reply: FastifyReply) => relay(req, reply, `${v3}${path}`, 'Keystone');
  app.route({ method: ['GET', 'POST', 'DELETE'], url: `${RELAYED_IDENTITY}/auth/tokens`, handler: to('/auth/tokens') });
  app.get(`${RELAYED_IDENTITY}/auth/projects`, to('/auth/projects'));
}

/** Barbican: secrets and containers, as the certificate pages list, store and read them. */
export function relayKeyManager(app: FastifyInstance, url: string): void {
  const v1 = `${url.replace(/\/+$/, '')}/v1`;
  const handler = async (req: FastifyRequest<{ Params: { '*': string } }>, reply: FastifyReply) => {
    const rest = req.params['*'];
    if (!/^(secrets|containers)(\/[0-9a-f-]{36}(\/(payload|acl|consumers))?)?\/?$/.test(rest)) throw apiError('ROUTE_NOT_FOUND');
    return relay(req, reply, `${v1}/${rest}`, 'Barbican');
  };
  app.route({ method: ['GET', 'POST', 'PUT', 'DELETE'], url: `${RELAYED_KEY_MANAGER}/*`, handler });
}
