/**
 * Reading what a TLS reference holds, with the service identity: a certificate with its key
 * (a PKCS#12 secret or a certificate container), CA certificates, a CRL (plain secrets, as
 * Octavia reads them). The API reads references this way to judge them, the amphora config
 * builder to ship them, expiry tracking to date them: one way to read, one set of refusals.
 */
import { CertificateError, parseCaBundle, parseCrl, parseTlsBundle, type CaBundle, type CertificateContainerParts, type Crl, type TlsBundle } from './certificates.js';
import { ForeignReferenceError, MissingReferenceError } from './errors.js';
import type { KeyManager, Material } from './index.js';

/** A reference the service cannot read (deleted, never given a payload, not of this key manager). */
export class UnretrievableReference extends Error {
  constructor(readonly ref: string) {
    super(`cannot retrieve ${ref}`);
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
    if (e instanceof MissingReferenceError || e instanceof ForeignReferenceError) throw new UnretrievableReference(ref);
    throw e;
  }
}

/** CA certificates and CRLs are plain secrets. */
async function secretPayload(keyManager: KeyManager, ref: string, what: string): Promise<Buffer> {
  const material = await resolve(keyManager, ref);
  if (material.kind === 'secret') return material.payload;
  throw new CertificateError(ref, `it is a certificate container; ${what} must be a secret`);
}

export async function readCertificate(keyManager: KeyManager, ref: string, options: ReadOptions = {}): Promise<TlsBundle> {
  const material = await resolve(keyManager, ref);
  const input: Buffer | CertificateContainerParts = material.kind === 'secret' ? material.payload : material.parts;
  return parseTlsBundle(input, { ref, ...options });
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
