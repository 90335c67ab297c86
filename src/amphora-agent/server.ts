/**
 * The agent's management API: HTTPS with mutual TLS on the amphora's management address.
 * Only clients whose certificate chains to the controllers' client CA get past the TLS
 * handshake (`requestCert` + `rejectUnauthorized`; CVE-2019-17134 was Octavia's agent silently
 * not checking this). Routes live under /1.0; every error is JSON `{error, details}`.
 *
 *   GET /1.0/info          amphora id, API and HAProxy versions, applied config version
 *   GET /1.0/config        the applied AmphoraConfig (404 before the first)
 *   PUT /1.0/config        apply an AmphoraConfig → {version, applied: reload|runtime|unchanged}
 *   GET /1.0/stats         what HAProxy reports, by listener/pool/member id, absolute counters
 *   PUT /1.0/certificate   {pem: server cert + its key}: rotate the agent's own certificate
 *   PUT /1.0/acme-challenges/{token}     {keyAuthorization}: answer an ACME HTTP-01 challenge on port 80
 *   DELETE /1.0/acme-challenges/{token}  stop answering it
 *   PUT /1.0/acme-tls-alpn-01/{name}     {certificate}: answer an ACME TLS-ALPN-01 challenge for name on port 443
 *   DELETE /1.0/acme-tls-alpn-01/{name}  stop answering it
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import type { Server } from 'node:https';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { writeFileAtomically } from './atomic-file.js';
import type { HaproxyProcess } from './haproxy/process.js';
import { snapshotFromStats } from './heartbeat.js';
import { ApplyError, type ConfigApplier } from './apply.js';
import { AcmeAlpnCertificate, AcmeChallenge, type AmphoraConfig } from '../domain/amphora-config.js';
import { AcmeChallengeError, type AcmeAlpnCertificates, type AcmeChallenges } from './acme-challenges.js';
import { violations } from './typed-check.js';

export const AGENT_API_VERSION = '1.0';
/** Large enough for a load balancer with thousands of members. */
const BODY_LIMIT_BYTES = 16 * 1024 * 1024;

export interface AgentTlsFiles {
  certFile: string;
  keyFile: string;
  clientCaFile: string;
}

export interface AgentServerOptions {
  amphoraId: string;
  tls: AgentTlsFiles;
  applier: ConfigApplier;
  haproxy: HaproxyProcess;
  haproxyVersion: string;
  acmeChallenges: AcmeChallenges;
  acmeAlpnCertificates: AcmeAlpnCertificates;
  logger?: Logger;
}

/** A request the agent refuses, answered as `{error, details}` with `status`. */
class AgentError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details: string | null = null,
  ) {
    super(message);
  }
}

function secureContextOptions(tls: AgentTlsFiles): SecureContextOptions {
  return { key: readFileSync(tls.keyFile), cert: readFileSync(tls.certFile), ca: readFileSync(tls.clientCaFile), minVersion: 'TLSv1.2' };
}

export function buildAgentServer(opts: AgentServerOptions): FastifyInstance<Server> {
  const app = Fastify({
    https: { ...secureContextOptions(opts.tls), requestCert: true, rejectUnauthorized: true },
    ...(opts.logger ? { loggerInstance: opts.logger as unknown as FastifyBaseLogger } : { logger: false }),
    // The controller polls: an access line per request would bury HAProxy's own messages.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
  }) as unknown as FastifyInstance<Server>;

  app.setErrorHandler((error, _request, reply) => {
    if (error instanceof ApplyError || error instanceof AgentError) return reply.code(error.status).send({ error: error.message, details: error.details });
    if (error instanceof AcmeChallengeError) return reply.code(409).send({ error: error.message, details: null });
    const status = (error as { statusCode?: number }).statusCode;
    // Fastify's own refusals (bad JSON, body too large, wrong content type) carry their status.
    if (status && status >= 400 && status < 500) return reply.code(status).send({ error: (error as Error).message, details: null });
    app.log.error(error);
    return reply.code(500).send({ error: 'internal error in the amphora agent', details: (error as Error).message });
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ error: 'no such resource', details: `${request.method} ${request.url}` }));

  app.get('/1.0/info', async () => ({
    amphoraId: opts.amphoraId,
    apiVersion: AGENT_API_VERSION,
    haproxyVersion: opts.haproxyVersion,
    configVersion: opts.applier.version,
    haproxy: opts.haproxy.status(),
    vipHeld: holdsVips(opts.applier.applied),
  }));

  app.get('/1.0/config', async () => {
    if (!opts.applier.applied) throw new AgentError(404, 'no configuration applied yet');
    return opts.applier.applied;
  });

  app.put('/1.0/config', async (request) => opts.applier.apply(request.body));

  app.get('/1.0/stats', async () => {
    const running = opts.haproxy.running;
    const snapshot = running ? snapshotFromStats(await opts.haproxy.runtime.showStat()) : { listeners: {}, pools: {} };
    return { configVersion: opts.applier.version, haproxy: opts.haproxy.status(), ...snapshot };
  });

  app.put('/1.0/certificate', async (request) => {
    const pem = (request.body as { pem?: unknown } | undefined)?.pem;
    if (typeof pem !== 'string') throw new AgentError(400, "the body must be {\"pem\": \"<certificate and private key, PEM>\"}");
    const identity = checkedIdentity(pem, opts.amphoraId);
    writeFileAtomically(opts.tls.keyFile, identity.key);
    writeFileAtomically(opts.tls.certFile, identity.cert);
    // New handshakes use the new certificate; established connections keep theirs.
    app.server.setSecureContext(secureContextOptions(opts.tls));
    return { notAfter: identity.notAfter };
  });

  app.put<{ Params: { token: string } }>('/1.0/acme-challenges/:token', async (request, reply) => {
    const challenge = { token: request.params.token, keyAuthorization: (request.body as { keyAuthorization?: unknown } | undefined)?.keyAuthorization };
    const problems = violations(AcmeChallenge, challenge);
    if (problems.length) throw new AgentError(400, 'invalid ACME challenge', problems.join('\n'));
    await opts.acmeChallenges.set(challenge as AcmeChallenge);
    return reply.code(204).send();
  });

  app.delete<{ Params: { token: string } }>('/1.0/acme-challenges/:token', async (request, reply) => {
    await opts.acmeChallenges.remove(request.params.token);
    return reply.code(204).send();
  });

  app.put<{ Params: { name: string } }>('/1.0/acme-tls-alpn-01/:name', async (request, reply) => {
    const problems = violations(AcmeAlpnCertificate, request.body);
    if (problems.length) throw new AgentError(400, 'invalid ACME TLS-ALPN-01 certificate', problems.join('\n'));
    await opts.acmeAlpnCertificates.set(request.params.name, request.body as AcmeAlpnCertificate);
    return reply.code(204).send();
  });

  app.delete<{ Params: { name: string } }>('/1.0/acme-tls-alpn-01/:name', async (request, reply) => {
    await opts.acmeAlpnCertificates.remove(request.params.name);
    return reply.code(204).send();
  });

  return app;
}

/** The certificate and key in `pem`, if they pair up, name this amphora and are valid now. */
function checkedIdentity(pem: string, amphoraId: string): { cert: string; key: string; notAfter: string } {
  const block = (label: string) => new RegExp(`-----BEGIN ${label}-----[\\s\\S]+?-----END ${label}-----`).exec(pem)?.[0];
  const cert = block('CERTIFICATE');
  const key = block('(?:EC |RSA )?PRIVATE KEY');
  if (!cert || !key) throw new AgentError(400, 'the PEM must hold a certificate and its private key');
  let parsed: X509Certificate;
  try {
    parsed = new X509Certificate(cert);
    createSecureContext({ cert, key });
  } catch (e) {
    throw new AgentError(400, 'the certificate or key is unusable', (e as Error).message);
  }
  if (parsed.checkHost(amphoraId) === undefined) throw new AgentError(400, `the certificate does not name amphora ${amphoraId}`, parsed.subject);
  const now = Date.now();
  if (Date.parse(parsed.validFrom) > now || Date.parse(parsed.validTo) < now)
    throw new AgentError(400, 'the certificate is not valid now', `valid from ${parsed.validFrom} to ${parsed.validTo}`);
  return { cert: `${cert}\n`, key: `${key}\n`, notAfter: new Date(parsed.validTo).toISOString() };
}

/**
 * Whether this amphora's network stack holds every VIP of its configuration (keepalived put them on
 * the MASTER of a pair); null before a configuration. The controller waits on it before it retires
 * the amphora a migration's pair replaces.
 */
function holdsVips(config: AmphoraConfig | null): boolean | null {
  if (!config) return null;
  const held = new Set(Object.values(networkInterfaces()).flatMap((addresses) => (addresses ?? []).map((a) => a.address)));
  return [config.vip.address, ...config.vip.additional].every((vip) => held.has(vip));
}
