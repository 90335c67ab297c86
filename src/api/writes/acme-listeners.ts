/**
 * What the API does for a listener's managed certificate (acme_domains, domain/rules/acme.ts):
 * refuse it where nothing could order it, and give a new listener a self-signed certificate,
 * stored in the key manager under the listener's project, to serve until the housekeeper's
 * first ACME order is issued (providers/amphora/acme/). The placeholder is removed again when
 * the listener's creation is refused, so a refusal leaves nothing behind.
 */
import type { FastifyRequest } from 'fastify';
import type { ApiDeps } from '../context.js';
import { apiError } from '../../domain/errors.js';
import { checkAcmeListener, normaliseAcmeDomains } from '../../domain/rules/acme.js';
import type { LoadBalancerRow } from '../../db/records/load-balancer.js';
import { EXTERNAL_STORE_REFUSAL } from '../../keymanager/external.js';
import { selfSignedServerCert } from '../../pki/ca.js';

/** How long the placeholder is valid: far beyond any retry of a failing order, so it never expires first. */
const PLACEHOLDER_VALIDITY_DAYS = 365;

/** A 400 when acme_domains cannot be honoured on `lb` in this deployment. */
export function checkAcmeAvailable(deps: ApiDeps, lb: Pick<LoadBalancerRow, 'provider'>): void {
  const refuse = (why: string) => {
    throw apiError('INVALID_INPUT', 'acme_domains', 'set', why);
  };
  if (!deps.config.acme.directoryUrl) refuse('Managed certificates are not configured in this deployment (acme.directoryUrl is empty): reference a certificate with default_tls_container_ref instead');
  if (deps.config.keyManager.mode === 'external') refuse(`Managed certificates are not available: ${EXTERNAL_STORE_REFUSAL}`);
  const provider = deps.providers.forLoadBalancer(lb.provider).name;
  if (provider !== 'amphora') refuse(`Managed certificates are answered by amphorae; the ${provider} provider has none`);
}

/**
 * Runs `create` with the reference of a placeholder certificate when the new listener asks for
 * managed certificates (else with none), deleting the placeholder if `create` fails.
 */
export async function withPlaceholderCertificate<T>(
  deps: ApiDeps,
  req: FastifyRequest,
  lb: LoadBalancerRow,
  input: { protocol: string; acme_domains?: string[] | null; default_tls_container_ref?: string | null },
  create: (placeholderRef: string | undefined) => Promise<T>,
): Promise<T> {
  if (!input.acme_domains) return create(undefined);
  checkAcmeAvailable(deps, lb);
  const domains = normaliseAcmeDomains(input.acme_domains)!;
  checkAcmeListener({ protocol: input.protocol, acme_domains: domains }, !!input.default_tls_container_ref);
  const cert = await selfSignedServerCert(domains, PLACEHOLDER_VALIDITY_DAYS);
  const ref = await deps.keyManager.storeCertificate(
    { projectId: lb.project_id, userId: req.ctx.userId },
    `${domains[0]} (self-signed until issued by ACME)`,
    { certificate: Buffer.from(cert.certPem), private_key: Buffer.from(cert.keyPem) },
  );
  try {
    return await create(ref);
  } catch (e) {
    await deps.keyManager.deleteCertificate(ref).catch((err: unknown) => req.log.warn({ err, ref }, 'the placeholder certificate of a refused listener could not be removed'));
    throw e;
  }
}
