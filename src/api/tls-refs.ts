/**
 * Certificate references of listeners and pools, checked before a change is written. Every
 * reference a request names must be readable by the caller (its project owns it, or a read
 * ACL names the caller), else Octavia's 400 `Could not retrieve certificate: [...]` lists
 * those references and says nothing about what they hold. Then the material, read with the
 * service identity, must be what the field needs — a certificate with its key, CA
 * certificates, a CRL signed by the object's CA — else a 400 naming the reference and the
 * problem. References are checked in parallel, and a request naming none never reaches the
 * key manager.
 */
import type { FastifyRequest } from 'fastify';
import { apiError, type ApiError } from '../domain/errors.js';
import { pyList } from '../domain/rules/listener.js';
import { CertificateError } from '../tls/certificates.js';
import { ForeignReferenceError, type Caller, type KeyManager } from '../keymanager/index.js';
import { readCaAndCrl, readCertificate, UnretrievableReference } from '../keymanager/tls-material.js';

export interface TlsRefs {
  /** Certificates with their keys (listener default and SNI, a pool's client certificate): PKCS#12 secrets or certificate containers. */
  readonly certificates: readonly string[];
  /** A secret holding CA certificates, PEM or DER. */
  readonly ca: string | null;
  /** A secret holding one CRL, which `ca` must have signed. */
  readonly crl: string | null;
}

/**
 * One object's change: `named` are the references the request gives (each checked for
 * access and parsed), `result` the object's references once the change applies (the CA a
 * named CRL is checked against may be the stored one, and a new CA must match a stored CRL).
 */
export interface TlsChange {
  readonly named: TlsRefs;
  readonly result: TlsRefs;
}

type Ref = string | null | undefined;

export function listenerTlsRefs(f: {
  default_tls_container_ref?: Ref;
  sni_container_refs?: readonly string[] | null;
  client_ca_tls_container_ref?: Ref;
  client_crl_container_ref?: Ref;
}): TlsRefs {
  // Octavia's order (SNI, then default), which its refusal lists them in.
  return { certificates: present([...(f.sni_container_refs ?? []), f.default_tls_container_ref]), ca: f.client_ca_tls_container_ref || null, crl: f.client_crl_container_ref || null };
}

export function poolTlsRefs(f: { tls_container_ref?: Ref; ca_tls_container_ref?: Ref; crl_container_ref?: Ref }): TlsRefs {
  return { certificates: present([f.tls_container_ref]), ca: f.ca_tls_container_ref || null, crl: f.crl_container_ref || null };
}

const LISTENER_REF_FIELDS = ['default_tls_container_ref', 'sni_container_refs', 'client_ca_tls_container_ref', 'client_crl_container_ref'] as const;
const POOL_REF_FIELDS = ['tls_container_ref', 'ca_tls_container_ref', 'crl_container_ref'] as const;

/** Whether an update body sets or clears a reference: only then does it concern the key manager. */
export function touchesListenerRefs(body: Partial<Record<(typeof LISTENER_REF_FIELDS)[number], unknown>>): boolean {
  return LISTENER_REF_FIELDS.some((field) => body[field] !== undefined);
}

export function touchesPoolRefs(body: Partial<Record<(typeof POOL_REF_FIELDS)[number], unknown>>): boolean {
  return POOL_REF_FIELDS.some((field) => body[field] !== undefined);
}

/** A create names all of its references. */
export function forCreate(refs: TlsRefs): TlsChange {
  return { named: refs, result: refs };
}

export function namesAny(refs: TlsRefs): boolean {
  return allOf(refs).length > 0;
}

/** The caller as the key manager judges it; an external Barbican decides with the caller's own token. */
export function tlsCaller(req: FastifyRequest): Caller {
  const token = req.headers['x-auth-token'];
  return { ...req.ctx, token: Array.isArray(token) ? token[0] : token };
}

export async function verifyTlsRefs(keyManager: KeyManager, caller: Caller, changes: readonly TlsChange[], now = new Date()): Promise<void> {
  const named = unique(changes.flatMap((c) => allOf(c.named)));
  if (!named.length) return;
  const access = await Promise.all(named.map((ref) => readable(keyManager, caller, ref)));
  const refused = named.filter((_, i) => access[i] !== true);
  if (refused.length) throw retrievalError(refused, access.filter((a): a is ForeignReferenceError => a instanceof ForeignReferenceError));

  const checks = unique(changes.flatMap((c) => c.named.certificates)).map((ref) => checkCertificate(keyManager, ref, now));
  const pairs = new Map<string, { ca: string; crl: string | null }>();
  for (const { named: n, result: r } of changes)
    // Without a CA a CRL is refused by the object's rules; nothing to parse it against here.
    if ((n.ca || n.crl) && r.ca) pairs.set(`${r.ca} ${r.crl}`, { ca: r.ca, crl: r.crl });
  for (const { ca, crl } of pairs.values()) checks.push(checkCaAndCrl(keyManager, ca, crl, now));
  const failure = (await Promise.allSettled(checks)).find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failure) throw asApiError(failure.reason);
}

function present(refs: readonly Ref[]): string[] {
  return refs.filter((r): r is string => !!r);
}

function unique(refs: readonly string[]): string[] {
  return [...new Set(refs)];
}

function allOf(refs: TlsRefs): string[] {
  return unique(present([...refs.certificates, refs.ca, refs.crl]));
}

/** A reference to another key manager is not readable either, and the caller is told why. */
async function readable(keyManager: KeyManager, caller: Caller, ref: string): Promise<boolean | ForeignReferenceError> {
  try {
    return await keyManager.canRead(caller, ref);
  } catch (e) {
    if (e instanceof ForeignReferenceError) return e;
    throw e;
  }
}

function retrievalError(refs: readonly string[], foreign: readonly ForeignReferenceError[]): ApiError {
  const why = foreign.length ? ` (${foreign.map((e) => e.message).join('; ')})` : '';
  return apiError('CERTIFICATE_RETRIEVAL', `${pyList(refs)}${why}`);
}

function asApiError(e: unknown): unknown {
  if (e instanceof CertificateError) return apiError('CERTIFICATE_INVALID', e.message);
  if (e instanceof UnretrievableReference) return retrievalError([e.ref], []);
  return e;
}

async function checkCertificate(keyManager: KeyManager, ref: string, now: Date): Promise<void> {
  await readCertificate(keyManager, ref, { now });
}

async function checkCaAndCrl(keyManager: KeyManager, caRef: string, crlRef: string | null, now: Date): Promise<void> {
  await readCaAndCrl(keyManager, caRef, crlRef, { now });
}
