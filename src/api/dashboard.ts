/**
 * `/dashboard`: the web dashboard's static files (built by scripts/bundle-dashboard.mjs into
 * dist/dashboard) and the one document it reads before login, `/dashboard/config`. The page
 * itself is a client of the public APIs only: it holds no session here, and this plugin
 * answers without a token.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { Config } from '../config.js';
import { DASHBOARD_PREFIX, type DashboardConfig } from '../domain/dashboard.js';
import { apiError } from '../domain/errors.js';
import { IDENTITY_PREFIX } from '../identity/catalog.js';
import { KEY_MANAGER_PREFIX } from '../keymanager/access.js';
import { RELAYED_IDENTITY, RELAYED_KEY_MANAGER, relayIdentity, relayKeyManager } from './dashboard-relay.js';

/** Asset names carry their content hash, so a browser may keep them for good; the page itself is revalidated each time. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';
/** Nothing but this origin: the dashboard makes no request elsewhere (ECharts sets inline styles). */
const CONTENT_SECURITY_POLICY = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** dist/dashboard: the build's output beside dist/src (this module is dist/src/api/dashboard.js). */
export const dashboardRoot = `${join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dashboard')}/`;

export function dashboardConfig(config: Config): DashboardConfig {
  return {
    identity: config.identity.mode === 'external' ? `${DASHBOARD_PREFIX}${RELAYED_IDENTITY}` : `${IDENTITY_PREFIX}/v3`,
    keyManager: config.keyManager.mode === 'external' ? `${DASHBOARD_PREFIX}${RELAYED_KEY_MANAGER}` : `${KEY_MANAGER_PREFIX}/v1`,
    policy: config.api.policy,
    identityMode: config.identity.mode,
  };
}

function secure(reply: FastifyReply): FastifyReply {
  return reply.header('content-security-policy', CONTENT_SECURITY_POLICY).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
}

export function dashboardRoutes(config: Config, root = dashboardRoot): FastifyPluginAsync {
  return async (app) => {
    const indexFile = `${root}index.html`;
    if (config.identity.mode === 'external') relayIdentity(app, config.identity.external.authUrl);
    if (config.keyManager.mode === 'external') relayKeyManager(app, config.keyManager.external.url);
    app.get('/config', async (_req, reply) => secure(reply).header('cache-control', REVALIDATE).send(dashboardConfig(config)));
    // Read at each request (a few hundred bytes): a build while the API runs names new assets and removes the old.
    app.get('/', async (_req, reply) => {
      const page = await readFile(indexFile).catch(() => null);
      if (!page) throw apiError('DASHBOARD_NOT_BUILT', root);
      return secure(reply).header('cache-control', REVALIDATE).type('text/html; charset=utf-8').send(page);
    });
    if (!existsSync(`${root}assets`)) return;
    await app.register(fastifyStatic, {
      root: `${root}assets`,
      prefix: '/assets/',
      cacheControl: false,
      index: false,
      setHeaders: (reply) => {
        reply.header('cache-control', IMMUTABLE).header('x-content-type-options', 'nosniff');
      },
    });
  };
}
