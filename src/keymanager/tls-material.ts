/**
 * Reading what a TLS reference holds, with the service identity: a certificate with its key
 * (a PKCS#12 secret or a certificate container), CA certificates, a CRL (plain secrets, as
 * Octavia reads them). The API reads references this way to judge them, the amphora config
 * builder to ship them, expiry tracking to date them: one way to read, one set of refusals.
 */
import { createHash } from 'node:crypto';
import { CertificateError, parseCaBundle, parseCrl, parseTlsBundle, type CaBundle, type CertificateContainerParts, type Crl, type TlsBundle } from '../tls/certificates.js';
import { ForeignReferenceError, MissingReferenceError } from './errors.js';
import type { KeyManager, Material } from './index.js';

/** A reference the service cannot read (deleted, never given a payload, not of this key manager). */
export class UnretrievableReference extends Error {
  constructor(
    readonly ref: string,
    why?: string,
  ) {
    super(`cannot retrieve ${ref}${why ? `: ${why}` : ''}`);
    this.name = 'UnretrievableReference';
  }
}

export interface ReadOptions {
  now?: Date;
  /**
   * Admit expired material. A new reference must not be expired; one already in service is
   * still served (and reported) when it expires, so a failover rebuilds what ran before.
   */
  acceptExpired?: boolean;
}

async function resolve(keyManager: KeyManager, ref: string): Promise<Material> {
  try {
    return await keyManager.resolveForService(ref);
  } catch (e) {
    if (e instanceof MissingReferenceError) throw new UnretrievableReference(ref);
    // A reference the API handed out that another process calls foreign: their public URLs differ.
    if (e instanceof ForeignReferenceError) throw new UnretrievableReference(ref, `${e.message}; every Ostia process must be given the same api.publicUrl (or api.host and api.port) in the config file they all read`);
    throw e;
  }
}

/** CA certificates and CRLs are plain secrets. */
async function secretPayload(keyManager: KeyManager, ref: string, what: string): Promise<Buffer> {
  const material = await resolve(keyManager, ref);
  if (material.kind === 'secret') return material.payload;
  throw new CertificateError(ref, `it is a certificate container; ${what} must be a secret`);
}

/**
 * Bundles read for service (expiry admitted), by reference and content: a PKCS#12 bundle costs
 * 50 to 150 ms of CPU to open (its key derivation runs in JavaScript), and one change reads
 * the same bundle to build the amphora's configuration, to verify what is served and to date
 * it. Keyed by content, so whatever the reference holds now is what is parsed.
 */
const serviceReads = new Map<string, TlsBundle>();
const SERVICE_READS_KEPT = 128;

function contentKey(ref: string, material: Material): string {
  const hash = createHash('sha256').update(ref).update('\0');
  if (material.kind === 'secret') hash.update(material.payload);
  else for (const part of ['certificate', 'private_key', 'intermediates', 'private_key_passphrase'] as const) hash.update(`\0${part}\0`).update(material.parts[part] ?? '');
  return hash.digest('hex');
}

export async function readCertificate(keyManager: KeyManager, ref: string, options: ReadOptions = {}): Promise<TlsBundle> {
  const material = await resolve(keyManager, ref);
  const input: Buffer | CertificateContainerParts = material.kind === 'secret' ? material.payload : material.parts;
  // A new reference is judged afresh (its validity depends on the time); one in service may be remembered.
  if (!options.acceptExpired) return parseTlsBundle(input, { ref, ...options });
  const key = contentKey(ref, material);
  const known = serviceReads.get(key);
  if (known) return known;
  const bundle = parseTlsBundle(input, { ref, ...options });
  if (serviceReads.size >= SERVICE_READS_KEPT) serviceReads.delete(serviceReads.keys().next().value!);
  serviceReads.set(key, bundle);
  return bundle;
}

export async function readCaBundle(keyManager: KeyManager, ref: string, options: ReadOptions = {}): Promise<CaBundle> {
  return parseCaBundle(await secretPayload(keyManager, ref, 'a CA certificate reference'), { ref, ...options });
}

/** A CRL, which `ca` must have signed. */
export async function readCrl(keyManager: KeyManager, ref: string, ca: CaBundle, options: ReadOptions = {}): Promise<Crl> {
  return parseCrl(await secretPayload(keyManager, ref, 'a revocation list reference'), { ref, ca, ...options });
}

/** A CA bundle and, when given, the CRL it signed, read in parallel. */
export async function readCaAndCrl(keyManager: KeyManager, caRef: string, crlRef: string | null, options: ReadOptions = {}): Promise<{ ca: CaBundle; crl: Crl | null }> {
  const [caPayload, crlPayload] = await Promise.all([
    secretPayload(keyManager, caRef, 'a CA certificate reference'),
    crlRef ? secretPayload(keyManager, crlRef, 'a revocation list reference') : null,
  ]);
  const ca = parseCaBundle(caPayload, { ref: caRef, ...options });
  return { ca, crl: crlPayload ? await parseCrl(crlPayload, { ref: crlRef!, ca, ...options }) : null };
}

/** The certificate, its chain and its key as HAProxy reads a `crt` file. */
export function haproxyCertificatePem(bundle: TlsBundle): string {
  return [bundle.certificatePem, ...bundle.intermediatesPem, bundle.privateKeyPem].map(pemBlocks).join('');
}

/** PEM text as blocks only: no CR, no blank line, a newline after each block. */
export function pemBlocks(text: string): string {
  const lines = text.replace(/\r/g, '').split('\n').filter((line) => line.trim() !== '');
  return lines.map((line) => `${line.trim()}\n`).join('');
}
