/**
 * The controller's certificate authorities for the management plane, kept as Octavia
 * recommends: a server CA signs each amphora agent's certificate and a separate client CA
 * signs the controller's client certificate. Agents trust only the client CA, so a
 * compromised amphora (which holds a server-CA-signed cert) cannot pose as a controller.
 *
 * The material lives in one directory (DATA_DIR/pki by default). Every controller process
 * of a deployment must see the same CAs: on one machine they share the data dir; a
 * multi-machine deployment must put that directory on shared storage or provision it
 * identically on each controller before start (the files below are all there is).
 *
 *   server-ca.pem / server-ca.key   signs amphora agent certs (serverAuth)
 *   client-ca.pem / client-ca.key   signs the controller's client cert (clientAuth)
 *   controller-client.pem           the controller's key + cert, re-issued near expiry
 *
 * Keys are ECDSA P-256 in PKCS#8 PEM, written 0600 in a 0700 directory.
 */
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
// @peculiar/x509 registers its algorithms through tsyringe, which needs the Reflect metadata polyfill.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { isUuid } from '../domain/net.js';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;
const CA_VALIDITY_DAYS = 3650;
const CONTROLLER_CERT_VALIDITY_DAYS = 365;
/** The controller's client cert is replaced this long before it expires. */
const CONTROLLER_CERT_RENEW_DAYS = 30;
/** Back-dating absorbs clock skew between the controller and freshly booted amphorae. */
const NOT_BEFORE_SKEW_MS = 5 * 60_000;

const FILES = {
  serverCa: 'server-ca.pem',
  serverCaKey: 'server-ca.key',
  clientCa: 'client-ca.pem',
  clientCaKey: 'client-ca.key',
  controllerClient: 'controller-client.pem',
} as const;

export interface IssuedCert {
  certPem: string;
  keyPem: string;
  /** Hex, as stored in amphora.cert_serial. */
  serial: string;
  notAfter: Date;
}

interface Authority {
  cert: x509.X509Certificate;
  key: CryptoKey;
}

export class CertificateAuthority {
  private controllerCert: IssuedCert | null = null;

  private constructor(
    private readonly dir: string,
    private readonly server: Authority,
    private readonly client: Authority,
  ) {}

  /** Loads the CAs from `dir`, creating them on first use (safe when several processes race). */
  static async open(dir: string): Promise<CertificateAuthority> {
    if (!existsSync(join(dir, FILES.serverCa))) await createAuthorities(dir);
    const [server, client] = await Promise.all([
      loadAuthority(dir, FILES.serverCa, FILES.serverCaKey),
      loadAuthority(dir, FILES.clientCa, FILES.clientCaKey),
    ]);
    return new CertificateAuthority(dir, server, client);
  }

  /** What the controller trusts when it connects to an agent. */
  get serverCaPem(): string {
    return this.server.cert.toString('pem');
  }

  /** What agents trust when the controller connects. */
  get clientCaPem(): string {
    return this.client.cert.toString('pem');
  }

  /** An agent's server cert: CN and DNS SAN = the amphora id (what the controller checks), IP SAN = its management address. */
  async issueAmphoraCert(amphoraId: string, managementAddress: string, validDays: number): Promise<IssuedCert> {
    if (!isUuid(amphoraId)) throw new Error(`cannot issue an amphora certificate: '${amphoraId}' is not an amphora id (a UUID)`);
    if (isIP(managementAddress) === 0) throw new Error(`cannot issue a certificate for amphora ${amphoraId}: '${managementAddress}' is not an IP address`);
    if (!(validDays > 0)) throw new Error(`cannot issue a certificate for amphora ${amphoraId}: validity must be positive (got ${validDays} days)`);
    return issueLeaf(this.server, {
      commonName: amphoraId,
      altNames: [
        { type: 'dns', value: amphoraId },
        { type: 'ip', value: managementAddress },
      ],
      usage: x509.ExtendedKeyUsage.serverAuth,
      validDays,
    });
  }

  /** The controller's client cert, shared by every controller process through the CA directory. */
  async controllerClientCert(): Promise<{ certPem: string; keyPem: string }> {
    if (!this.controllerCert || needsRenewal(this.controllerCert)) this.controllerCert = await this.loadOrIssueControllerCert();
    return { certPem: this.controllerCert.certPem, keyPem: this.controllerCert.keyPem };
  }

  private async loadOrIssueControllerCert(): Promise<IssuedCert> {
    const file = join(this.dir, FILES.controllerClient);
    const stored = await readControllerBundle(file);
    if (stored && !needsRenewal(stored) && (await this.signedByClientCa(stored.certPem))) return stored;
    const issued = await issueLeaf(this.client, {
      commonName: 'ostia-controller',
      altNames: [],
      usage: x509.ExtendedKeyUsage.clientAuth,
      validDays: CONTROLLER_CERT_VALIDITY_DAYS,
    });
    // Key and cert in one file, replaced by rename, so a concurrent reader never sees a mismatched pair.
    await writeAtomically(file, issued.keyPem + issued.certPem);
    return issued;
  }

  /** A bundle left by an earlier CA (the directory was re-provisioned) must not be presented. */
  private async signedByClientCa(certPem: string): Promise<boolean> {
    return new x509.X509Certificate(certPem).verify({ publicKey: this.client.cert.publicKey, signatureOnly: true });
  }
}

function needsRenewal(cert: { notAfter: Date }): boolean {
  return cert.notAfter.getTime() - Date.now() < CONTROLLER_CERT_RENEW_DAYS * DAY_MS;
}

async function readControllerBundle(file: string): Promise<IssuedCert | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  const keyPem = pemBlock(text, 'PRIVATE KEY');
  const certPem = pemBlock(text, 'CERTIFICATE');
  if (!keyPem || !certPem) return null;
  const cert = new x509.X509Certificate(certPem);
  return { certPem, keyPem, serial: cert.serialNumber, notAfter: cert.notAfter };
}

function pemBlock(text: string, label: string): string | null {
  const match = new RegExp(`-----BEGIN ${label}-----[\\s\\S]+?-----END ${label}-----\\n?`).exec(text);
  return match ? match[0].replace(/\n?$/, '\n') : null;
}

/**
 * Builds both CAs in a private temporary directory and renames it into place: rename of a
 * directory is atomic, so of several processes starting at once exactly one wins and the
 * others load the winner's CAs.
 */
async function createAuthorities(dir: string): Promise<void> {
  const parent = dirname(dir);
  await mkdir(parent, { recursive: true });
  const staging = await mkdtemp(join(parent, '.pki-'));
  try {
    await writeAuthority(staging, FILES.serverCa, FILES.serverCaKey, 'Ostia amphora server CA');
    await writeAuthority(staging, FILES.clientCa, FILES.clientCaKey, 'Ostia controller client CA');
    await rename(staging, dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    await rm(staging, { recursive: true, force: true });
    // Another process created the directory first: its CAs are the deployment's.
    if ((code === 'ENOTEMPTY' || code === 'EEXIST') && existsSync(join(dir, FILES.serverCa))) return;
    if (code === 'ENOTEMPTY' || code === 'EEXIST')
      throw new Error(`cannot create the certificate authority: ${dir} exists and holds no ${FILES.serverCa}; remove the directory or point dataDir elsewhere`);
    throw e;
  }
}

async function writeAuthority(dir: string, certFile: string, keyFile: string, commonName: string): Promise<void> {
  const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: [{ CN: [commonName] }, { O: ['Ostia'] }],
    notBefore: new Date(Date.now() - NOT_BEFORE_SKEW_MS),
    notAfter: new Date(Date.now() + CA_VALIDITY_DAYS * DAY_MS),
    signingAlgorithm: SIGNING_ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  await writeFile(join(dir, keyFile), await privateKeyPem(keys.privateKey), { mode: 0o600 });
  await writeFile(join(dir, certFile), cert.toString('pem') + '\n', { mode: 0o644 });
}

async function loadAuthority(dir: string, certFile: string, keyFile: string): Promise<Authority> {
  const [certPem, keyPem] = await Promise.all([readFile(join(dir, certFile), 'utf8'), readFile(join(dir, keyFile), 'utf8')]);
  const cert = new x509.X509Certificate(certPem);
  const key = await webcrypto.subtle.importKey('pkcs8', x509.PemConverter.decodeFirst(keyPem), KEY_ALGORITHM, false, ['sign']);
  return { cert, key };
}

async function issueLeaf(
  ca: Authority,
  req: { commonName: string; altNames: Array<{ type: 'dns' | 'ip'; value: string }>; usage: x509.ExtendedKeyUsage; validDays: number },
): Promise<IssuedCert> {
  const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const notAfter = new Date(Date.now() + req.validDays * DAY_MS);
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension([req.usage]),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
  ];
  if (req.altNames.length) extensions.push(new x509.SubjectAlternativeNameExtension(req.altNames));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: [{ CN: [req.commonName] }],
    issuer: ca.cert.subjectName,
    notBefore: new Date(Date.now() - NOT_BEFORE_SKEW_MS),
    notAfter,
    signingAlgorithm: SIGNING_ALGORITHM,
    publicKey: keys.publicKey,
    signingKey: ca.key,
    extensions,
  });
  return { certPem: cert.toString('pem') + '\n', keyPem: await privateKeyPem(keys.privateKey), serial: cert.serialNumber, notAfter: cert.notAfter };
}

/**
 * A self-signed server certificate for `names`: what a listener with managed certificates
 * serves until its first ACME certificate is issued (a client sees an untrusted certificate,
 * never a closed port).
 */
export async function selfSignedServerCert(names: readonly string[], validDays: number): Promise<IssuedCert> {
  const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: [{ CN: [names[0]!] }, { O: ['Ostia (until the ACME certificate is issued)'] }],
    notBefore: new Date(Date.now() - NOT_BEFORE_SKEW_MS),
    notAfter: new Date(Date.now() + validDays * DAY_MS),
    signingAlgorithm: SIGNING_ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names.map((value) => ({ type: 'dns' as const, value }))),
    ],
  });
  return { certPem: cert.toString('pem') + '\n', keyPem: await privateKeyPem(keys.privateKey), serial: cert.serialNumber, notAfter: cert.notAfter };
}

/** 128 random bits with the top bit clear, so the DER integer stays positive without padding. */
function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString('hex');
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY') + '\n';
}

async function writeAtomically(file: string, content: string): Promise<void> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(temp, content, { mode: 0o600 });
  await rename(temp, file);
}
