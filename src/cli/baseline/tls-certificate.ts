/**
 * The certificate of the baseline's TERMINATED_HTTPS listener: self-signed for the VIP (the load generator
 * does not verify it), stored in the service's key manager as a certificate container, as a user would, and
 * deleted with the rest of the mix.
 */
import { webcrypto } from 'node:crypto';
// @peculiar/x509 needs the Reflect metadata API before it loads.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import type { Session } from '../api-session.js';

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

export interface StoredCertificate {
  containerRef: string;
  /** Every ref made, the container last: deleted in reverse. */
  refs: string[];
}

async function selfSigned(commonName: string): Promise<{ certPem: string; keyPem: string }> {
  const keys = await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: [{ CN: [commonName] }],
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + DAY_MS),
    signingAlgorithm: ALGORITHM,
    keys,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: commonName }])],
  });
  const keyPem = x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey), 'PRIVATE KEY');
  return { certPem: cert.toString('pem'), keyPem };
}

/** Stores a fresh certificate and key in the key manager at `keyManagerUrl`; `made` learns each ref as it is made. */
export async function storeCertificate(session: Session, keyManagerUrl: string, made: string[]): Promise<string> {
  const { certPem, keyPem } = await selfSigned('baseline.ostia.invalid');
  const refs: Array<{ name: string; secret_ref: string }> = [];
  for (const [name, payload] of [['certificate', certPem], ['private_key', keyPem]] as const) {
    const { secret_ref } = await session.json<{ secret_ref: string }>('POST', `${keyManagerUrl}/v1/secrets`, { name: `ostia-baseline-${name}`, payload, payload_content_type: 'text/plain' });
    made.push(secret_ref);
    refs.push({ name, secret_ref });
  }
  const { container_ref } = await session.json<{ container_ref: string }>('POST', `${keyManagerUrl}/v1/containers`, { type: 'certificate', name: 'ostia-baseline', secret_refs: refs });
  made.push(container_ref);
  return container_ref;
}
