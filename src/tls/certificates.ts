/**
 * Reads the TLS material a listener or pool references and refuses what HAProxy would serve
 * badly: a key that does not match, a chain that does not chain, an expired or weak
 * certificate. Every refusal is a CertificateError naming the reference and the problem, and
 * never quoting the material itself (it may hold a key, and the message reaches API callers).
 *
 * PKCS#12 goes through node-forge because Node's crypto cannot read it (and OpenSSL 3 only
 * reads the legacy RC2-40 profile Kubernetes still emits with its legacy provider loaded);
 * everything else goes through Node's crypto, CRLs through @peculiar/x509.
 */
import { X509Certificate, createPrivateKey, createPublicKey, webcrypto, type KeyObject } from 'node:crypto';
// @peculiar/x509 registers its algorithms through tsyringe, which needs the Reflect metadata polyfill.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import forge from 'node-forge';

export class CertificateError extends Error {
  constructor(
    readonly ref: string,
    readonly reason: string,
  ) {
    super(`Invalid TLS reference ${ref}: ${reason}`);
    this.name = 'CertificateError';
  }
}

export type KeyType = 'rsa' | 'rsa-pss' | 'ec' | 'ed25519' | 'ed448';

export interface TlsBundle {
  certificatePem: string;
  /** Unencrypted PKCS#8, for the amphora only. */
  privateKeyPem: string;
  /** The leaf's issuer first, then its issuer, and so on. */
  intermediatesPem: string[];
  notBefore: Date;
  notAfter: Date;
  /** Colon-separated upper-case hex, as Node's TLS sockets report a peer's certificate. */
  fingerprintSha256: string;
  subjectCn: string | null;
  /** The subjectAltName DNS names; the CN when the certificate has no subjectAltName. */
  dnsNames: string[];
  keyType: KeyType;
  keyBits: number;
}

/** A Barbican certificate container's secrets, as their payloads. */
export interface CertificateContainerParts {
  certificate: string | Buffer;
  private_key?: string | Buffer;
  intermediates?: string | Buffer;
  private_key_passphrase?: string | Buffer;
}

export interface TlsParseOptions {
  ref: string;
  now?: Date;
  /** For a secret holding a PKCS#12 bundle or an encrypted PEM key; default empty. */
  passphrase?: string | Buffer;
  /** Read an expired certificate (CA bundle, CRL) rather than refuse it: expiry monitoring must see what is still in use. */
  acceptExpired?: boolean;
}

export interface CaBundle {
  ref: string;
  certificatesPem: string[];
  /** Every certificate, concatenated, as HAProxy's ca-file wants them. */
  pem: string;
  /** The earliest not-after of the bundle. */
  notAfter: Date;
}

export interface Crl {
  crlPem: string;
  thisUpdate: Date;
  nextUpdate: Date | null;
  revokedCount: number;
}

type Fail = (reason: string) => never;

const NEITHER = 'the secret is neither a PKCS#12 bundle nor PEM';
const PKCS12_PASSPHRASE = 'cannot decrypt the PKCS#12 bundle: wrong or missing passphrase';
const KEY_PASSPHRASE = 'cannot decrypt the private key: wrong or missing passphrase';
const KEY_LABELS = new Set(['PRIVATE KEY', 'ENCRYPTED PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY', 'DSA PRIVATE KEY']);
/** Written by `openssl ecparam -genkey` before the key; the key carries its curve anyway. */
const IGNORED_LABELS = new Set(['EC PARAMETERS']);
const EC_CURVE_BITS: Record<string, number> = { prime256v1: 256, secp384r1: 384, secp521r1: 521 };
/**
 * forge derives PKCS#12 keys in plain JavaScript on the event loop (100,000 iterations take
 * about a second), so a bundle claiming millions would stall the API. OpenSSL, Windows and
 * Java use 2,000 to 10,000 per MAC or encryption.
 */
const MAX_PKCS12_ITERATIONS = 200_000;

/** What a secret or container holds, before any check. */
interface Material {
  source: string;
  certs: X509Certificate[];
  keys: KeyObject[];
  /** Set when the input says which certificate is the leaf (a container's `certificate`). */
  leaf?: X509Certificate;
}

export function parseTlsBundle(input: Buffer | string | CertificateContainerParts, options: TlsParseOptions): TlsBundle {
  const fail: Fail = failFor(options.ref);
  const material = typeof input === 'string' || Buffer.isBuffer(input)
    ? readSecret(bytes(input), passphraseOf(options.passphrase), fail)
    : readContainer(input, fail);
  return checkBundle(material, options.now ?? new Date(), fail, options.acceptExpired);
}

/** One or more CA certificates (PEM, or a single DER certificate). */
export function parseCaBundle(input: Buffer | string, options: { ref: string; now?: Date; acceptExpired?: boolean }): CaBundle {
  const fail: Fail = failFor(options.ref);
  const data = bytes(input);
  const blocks = pemBlocks(data, 'the CA bundle', fail);
  let certs: X509Certificate[];
  if (blocks.length > 0) {
    const stray = blocks.find((block) => block.label !== 'CERTIFICATE');
    if (stray) fail(`the CA bundle holds a ${KEY_LABELS.has(stray.label) ? 'private key' : `${stray.label} block`}; it must hold certificates only`);
    certs = blocks.map((block) => readCertificate(block.text, 'the CA bundle', fail));
  } else {
    certs = [readDerCertificate(data) ?? fail('the secret is neither a PEM nor a DER certificate')];
  }
  certs = uniqueCertificates(certs);
  const now = options.now ?? new Date();
  for (const cert of certs) checkValidity(cert, `CA certificate "${subjectOf(cert)}"`, now, fail, options.acceptExpired);
  const certificatesPem = certs.map((cert) => cert.toString());
  return {
    ref: options.ref,
    certificatesPem,
    pem: certificatesPem.join(''),
    notAfter: new Date(Math.min(...certs.map((cert) => Date.parse(cert.validTo)))),
  };
}

/** A CRL (PEM or DER) that must be signed by a certificate of `ca`, and current. */
export async function parseCrl(input: Buffer | string, options: { ref: string; ca: CaBundle; now?: Date; acceptExpired?: boolean }): Promise<Crl> {
  const fail: Fail = failFor(options.ref);
  const data = bytes(input);
  const blocks = pemBlocks(data, 'the secret', fail);
  if (blocks.length > 1 || blocks.some((block) => block.label !== 'X509 CRL')) fail('the secret must hold exactly one X509 CRL');
  let crl: x509.X509Crl;
  try {
    crl = blocks.length === 1 ? new x509.X509Crl(blocks[0].text) : new x509.X509Crl(new Uint8Array(data));
  } catch {
    fail('the secret is neither a PEM nor a DER CRL');
  }
  let signed = false;
  for (const pem of options.ca.certificatesPem) {
    const issuer = new x509.X509Certificate(pem);
    if (issuer.subject !== crl.issuer) continue;
    signed = await crl.verify({ publicKey: issuer }, webcrypto as unknown as Crypto).catch(() => false);
    if (signed) break;
  }
  if (!signed) fail(`the CRL is not signed by a CA certificate of ${options.ca.ref}`);
  const now = options.now ?? new Date();
  if (crl.thisUpdate > now) fail(`the CRL is not valid before ${crl.thisUpdate.toISOString()}`);
  // An expired CRL makes HAProxy refuse every client certificate.
  if (!options.acceptExpired && crl.nextUpdate && crl.nextUpdate < now) fail(`the CRL expired on ${crl.nextUpdate.toISOString()}`);
  return {
    // OpenSSL (hence HAProxy's crl-file) reads only this label; @peculiar/x509 writes "CRL".
    crlPem: `${x509.PemConverter.encode(crl.rawData, 'X509 CRL')}\n`,
    thisUpdate: crl.thisUpdate,
    nextUpdate: crl.nextUpdate ?? null,
    revokedCount: crl.entries.length,
  };
}

function failFor(ref: string): Fail {
  return (reason) => {
    throw new CertificateError(ref, reason);
  };
}

function bytes(input: string | Buffer): Buffer {
  return typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
}

function passphraseOf(passphrase: string | Buffer | undefined): string | undefined {
  return Buffer.isBuffer(passphrase) ? passphrase.toString('utf8') : passphrase;
}

// ---- reading ----

interface PemBlock {
  label: string;
  text: string;
}

/**
 * The PEM blocks of `data`. A body never contains "-----", which keeps the scan linear on
 * hostile input; a BEGIN without its END (a truncated paste) is refused rather than skipped.
 */
function pemBlocks(data: Buffer, source: string, fail: Fail): PemBlock[] {
  const text = data.toString('latin1');
  const matches = [...text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----(?:[^-]|-(?!----))*-----END \1-----/g)];
  if (matches.length !== text.split('-----BEGIN ').length - 1) fail(`${source} holds an incomplete PEM block`);
  return matches.map((match) => ({ label: match[1], text: match[0] })).filter((block) => !IGNORED_LABELS.has(block.label));
}

/** A secret's payload: a PKCS#12 bundle, or PEM holding the certificate, its key and chain. */
function readSecret(data: Buffer, passphrase: string | undefined, fail: Fail): Material {
  const blocks = pemBlocks(data, 'the secret', fail);
  if (blocks.length > 0) return { source: 'the secret', ...readPem(blocks, 'the secret', passphrase, fail) };
  return readPkcs12(data, passphrase, fail);
}

function readContainer(parts: CertificateContainerParts, fail: Fail): Material {
  const passphrase = passphraseOf(parts.private_key_passphrase);
  const read = (name: 'certificate' | 'private_key' | 'intermediates') => {
    const payload = parts[name];
    const source = `the ${name} secret`;
    if (payload === undefined) return { certs: [], keys: [] };
    const blocks = pemBlocks(bytes(payload), source, fail);
    if (blocks.length > 0) return readPem(blocks, source, passphrase, fail);
    const der = name === 'certificate' ? readDerCertificate(bytes(payload)) : undefined;
    return der ? { certs: [der], keys: [] } : fail(`${source} is not PEM`);
  };
  const certificate = read('certificate');
  if (certificate.certs.length === 0) fail('the certificate secret holds no certificate');
  const privateKey = read('private_key');
  const intermediates = read('intermediates');
  return {
    source: 'the container',
    certs: [...certificate.certs, ...privateKey.certs, ...intermediates.certs],
    keys: [...certificate.keys, ...privateKey.keys, ...intermediates.keys],
    leaf: certificate.certs[0],
  };
}

function readPem(blocks: PemBlock[], source: string, passphrase: string | undefined, fail: Fail) {
  const certs: X509Certificate[] = [];
  const keys: KeyObject[] = [];
  for (const block of blocks) {
    if (block.label === 'CERTIFICATE') certs.push(readCertificate(block.text, source, fail));
    else if (KEY_LABELS.has(block.label)) keys.push(readKey(block, source, passphrase, fail));
    else fail(`${source} holds an unexpected ${block.label} block`);
  }
  return { certs, keys };
}

function readCertificate(pem: string, source: string, fail: Fail): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch {
    fail(`${source} holds a certificate that cannot be read`);
  }
}

function readDerCertificate(data: Buffer): X509Certificate | undefined {
  try {
    return new X509Certificate(data);
  } catch {
    return undefined;
  }
}

function readKey(block: PemBlock, source: string, passphrase: string | undefined, fail: Fail): KeyObject {
  const encrypted = block.label === 'ENCRYPTED PRIVATE KEY' || block.text.includes('Proc-Type: 4,ENCRYPTED');
  try {
    return createPrivateKey({ key: block.text, format: 'pem', passphrase });
  } catch {
    fail(encrypted ? KEY_PASSPHRASE : `${source} holds a private key that cannot be read`);
  }
}

function readPkcs12(data: Buffer, passphrase: string | undefined, fail: Fail): Material {
  let pfx: forge.asn1.Asn1;
  try {
    pfx = forge.asn1.fromDer(data.toString('binary'), false);
  } catch {
    fail(NEITHER);
  }
  const [version, authSafe] = Array.isArray(pfx.value) ? pfx.value : [];
  const isPfx = pfx.type === forge.asn1.Type.SEQUENCE && version?.type === forge.asn1.Type.INTEGER
    && authSafe?.type === forge.asn1.Type.SEQUENCE;
  if (!isPfx) fail(NEITHER);
  if (iterationCount(pfx) > MAX_PKCS12_ITERATIONS) {
    fail(`the PKCS#12 bundle asks for more than ${MAX_PKCS12_ITERATIONS} key-derivation iterations`);
  }

  // PKCS#12 encodes "no password" either as an empty string or as nothing at all, and tools
  // differ; OpenSSL tries both, and so does this. (forge's types omit the null it accepts.)
  const candidates = passphrase ? [passphrase] : ['', null as unknown as string];
  let p12: forge.pkcs12.Pkcs12Pfx | undefined;
  let firstError: unknown;
  for (const password of candidates) {
    try {
      p12 = forge.pkcs12.pkcs12FromAsn1(pfx, false, password);
      break;
    } catch (error) {
      firstError ??= error;
    }
  }
  if (!p12) {
    const message = firstError instanceof Error ? firstError.message : '';
    fail(/password|decrypt/i.test(message) ? PKCS12_PASSPHRASE : 'the PKCS#12 bundle is malformed or uses an unsupported algorithm');
  }

  const { pki } = forge;
  const { oids } = pki;
  const der = (node: forge.asn1.Asn1) => Buffer.from(forge.asn1.toDer(node).getBytes(), 'binary');
  const bags = p12.safeContents.flatMap((contents) => contents.safeBags);
  try {
    return {
      source: 'the PKCS#12 bundle',
      // forge decodes RSA material itself and hands back the raw ASN.1 of anything else.
      certs: bags.filter((bag) => bag.type === oids.certBag)
        .map((bag) => new X509Certificate(der(bag.cert ? pki.certificateToAsn1(bag.cert) : bag.asn1))),
      keys: bags.filter((bag) => bag.type === oids.keyBag || bag.type === oids.pkcs8ShroudedKeyBag)
        .map((bag) => createPrivateKey({
          key: der(bag.key ? pki.wrapRsaPrivateKey(pki.privateKeyToAsn1(bag.key)) : bag.asn1),
          format: 'der',
          type: 'pkcs8',
        })),
    };
  } catch {
    fail('the PKCS#12 bundle holds a certificate or key that cannot be read');
  }
}

/**
 * The sum of the iteration counts of every MAC and PBE parameter set (an INTEGER right after
 * the OCTET STRING salt), looking inside OCTET STRINGs that hold DER.
 */
function iterationCount(node: forge.asn1.Asn1): number {
  const { Class, Type } = forge.asn1;
  const is = (candidate: forge.asn1.Asn1 | undefined, type: number) =>
    candidate?.tagClass === Class.UNIVERSAL && candidate.type === type;
  if (!Array.isArray(node.value)) {
    if (!is(node, Type.OCTETSTRING) || node.constructed) return 0;
    try {
      return iterationCount(forge.asn1.fromDer(node.value, false));
    } catch {
      return 0;
    }
  }
  let total = 0;
  node.value.forEach((child, index) => {
    const previous = node.value[index - 1] as forge.asn1.Asn1 | undefined;
    if (is(child, Type.INTEGER) && is(previous, Type.OCTETSTRING) && typeof child.value === 'string') {
      total += [...child.value].reduce((sum, char) => sum * 256 + char.charCodeAt(0), 0);
    }
    total += iterationCount(child);
  });
  return total;
}

// ---- checks ----

function checkBundle(material: Material, now: Date, fail: Fail, acceptExpired = false): TlsBundle {
  const { source } = material;
  const certs = uniqueCertificates(material.certs);
  const keys = uniqueKeys(material.keys);
  if (certs.length === 0) fail(`${source} holds no certificate`);
  if (keys.length === 0) fail(`${source} holds no private key`);
  if (keys.length > 1) fail(`${source} holds ${keys.length} private keys; expected one`);
  const [key] = keys;
  const { keyType, keyBits } = keyStrength(key, fail);

  let leaf = material.leaf;
  if (!leaf) {
    const matching = certs.filter((cert) => cert.checkPrivateKey(key));
    if (matching.length > 1) fail(`${source} holds ${matching.length} certificates for its private key; expected one`);
    leaf = matching[0];
  }
  if (!leaf?.checkPrivateKey(key)) fail('the certificate and the private key do not match');

  const chain = orderChain(leaf, certs.filter((cert) => cert !== leaf), fail);
  checkValidity(leaf, 'the certificate', now, fail, acceptExpired);
  for (const cert of chain) checkValidity(cert, `intermediate "${subjectOf(cert)}"`, now, fail, acceptExpired);

  const subjectCn = commonName(leaf);
  return {
    certificatePem: leaf.toString(),
    privateKeyPem: key.export({ type: 'pkcs8', format: 'pem' }) as string,
    intermediatesPem: chain.map((cert) => cert.toString()),
    notBefore: new Date(leaf.validFrom),
    notAfter: new Date(leaf.validTo),
    fingerprintSha256: leaf.fingerprint256,
    subjectCn,
    dnsNames: leaf.subjectAltName === undefined ? (subjectCn ? [subjectCn] : []) : sanDnsNames(leaf.subjectAltName),
    keyType,
    keyBits,
  };
}

function keyStrength(key: KeyObject, fail: Fail): { keyType: KeyType; keyBits: number } {
  const details = key.asymmetricKeyDetails ?? {};
  const type = key.asymmetricKeyType;
  switch (type) {
    case 'rsa':
    case 'rsa-pss': {
      const bits = details.modulusLength ?? 0;
      if (bits < 2048) fail(`the ${bits}-bit RSA key is too weak; at least 2048 bits are required`);
      return { keyType: type, keyBits: bits };
    }
    case 'ec': {
      const curve = details.namedCurve;
      const bits = curve === undefined ? undefined : EC_CURVE_BITS[curve];
      if (bits === undefined) {
        fail(`the EC curve ${curve ?? '(explicit parameters)'} is not supported; use P-256, P-384 or P-521`);
      }
      return { keyType: 'ec', keyBits: bits };
    }
    case 'ed25519':
      return { keyType: type, keyBits: 256 };
    case 'ed448':
      return { keyType: type, keyBits: 448 };
    case 'dsa':
      return fail('DSA keys are not supported; use an RSA key of at least 2048 bits or an EC key');
    default:
      return fail(`${type ?? 'unknown'} keys cannot sign a TLS certificate`);
  }
}

/**
 * The chain HAProxy must send: leaf's issuer, then its issuer... Any input order is
 * accepted; a certificate that does not belong to the chain is refused by name.
 */
function orderChain(leaf: X509Certificate, others: X509Certificate[], fail: Fail): X509Certificate[] {
  const chain: X509Certificate[] = [];
  const remaining = [...others];
  for (let current = leaf; ;) {
    const index = remaining.findIndex((cert) => current.checkIssued(cert) && current.verify(cert.publicKey));
    if (index < 0) break;
    [current] = remaining.splice(index, 1);
    chain.push(current);
  }
  if (remaining.length > 0) fail(`intermediate "${subjectOf(remaining[0])}" is not part of the certificate's chain`);
  return chain;
}

function checkValidity(cert: X509Certificate, name: string, now: Date, fail: Fail, acceptExpired = false): void {
  const notBefore = new Date(cert.validFrom);
  const notAfter = new Date(cert.validTo);
  if (now < notBefore) fail(`${name} is not valid before ${notBefore.toISOString()}`);
  if (!acceptExpired && now > notAfter) fail(`${name} expired on ${notAfter.toISOString()}`);
}

function uniqueCertificates(certs: X509Certificate[]): X509Certificate[] {
  return certs.filter((cert, index) => certs.findIndex((other) => other.fingerprint256 === cert.fingerprint256) === index);
}

function uniqueKeys(keys: KeyObject[]): KeyObject[] {
  const publicDer = keys.map((key) => createPublicKey(key).export({ type: 'spki', format: 'der' }));
  return keys.filter((_, index) => publicDer.findIndex((der) => der.equals(publicDer[index])) === index);
}

/** Node prints a distinguished name one attribute per line. */
function subjectOf(cert: X509Certificate): string {
  return cert.subject.split('\n').join(', ');
}

function commonName(cert: X509Certificate): string | null {
  const cn = cert.subject.split('\n').filter((line) => line.startsWith('CN=')).pop();
  return cn === undefined ? null : cn.slice(3);
}

/** Node lists entries as `DNS:a, IP Address:…`, JSON-quoting values that hold a separator. */
function sanDnsNames(subjectAltName: string): string[] {
  const entry = /([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/y;
  const names: string[] = [];
  for (let match = entry.exec(subjectAltName); match; match = entry.exec(subjectAltName)) {
    const value = match[2].startsWith('"') ? (JSON.parse(match[2]) as string) : match[2];
    if (match[1] === 'DNS') names.push(value);
    if (entry.lastIndex >= subjectAltName.length) break;
  }
  return names;
}
