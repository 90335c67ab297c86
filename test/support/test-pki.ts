/**
 * A throwaway PKI for tests. `createTestPki()` makes a root CA ("Ostia Test Root CA") and an
 * intermediate CA under it, then issues on demand:
 *
 *   ca(cn, issuer?)            another CA, self-signed unless an issuer is given
 *   leaf({cn, dnsNames?, ipAddresses?, key?, issuer?, days?})
 *                              a certificate usable for serverAuth and clientAuth, issued by the
 *                              intermediate unless told otherwise; RSA 2048 unless `key` says
 *   pkcs12({key?, certs?, passphrase?, legacy?, plain?, iterations?})
 *                              a bundle in OpenSSL 3's default profile (AES-256/PBKDF2),
 *                              the legacy RC2-40 one, or unencrypted without a MAC
 *   keyAs(cert, form, pass?)   the cert's key as PKCS#8 or traditional (PKCS#1/SEC1), optionally encrypted
 *   crl(ca, revoked?, {days?, der?})
 *                              a CRL that `ca` signs, listing `revoked`
 *   remove()                   deletes everything
 *
 * and `mergePkcs12(bundles)` joins unencrypted bundles, e.g. into one holding two keys.
 * Everything is made by the real `openssl` CLI at test time, in one temporary directory, so no
 * binary fixture is committed and every artefact is what real tools write. An IssuedCert also
 * names its files, for tests that hand them to HAProxy, curl or a TLS server.
 * CAs are valid ten years and leaves one year by default, so a leaf of `days` > 3650 outlives its CA.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';

export type KeyKind = 'rsa2048' | 'rsa1024' | 'ec-p256' | 'ec-p384' | 'ec-secp256k1' | 'ed25519' | 'dsa2048';

/** Traditional is PKCS#1 for RSA and SEC1 for EC; Ed25519 has none. */
export type KeyForm = 'pkcs8' | 'traditional' | 'pkcs8-encrypted' | 'traditional-encrypted';

export interface IssuedCert {
  cn: string;
  /** As Node's X509Certificate prints it. */
  subject: string;
  key: KeyKind;
  certPem: string;
  /** Unencrypted PKCS#8. */
  keyPem: string;
  certPath: string;
  keyPath: string;
}

export interface LeafOptions {
  cn: string;
  /** Without DNS names or IP addresses the certificate has no subjectAltName at all. */
  dnsNames?: string[];
  ipAddresses?: string[];
  /** Default rsa2048. */
  key?: KeyKind;
  /** Default the intermediate CA. */
  issuer?: IssuedCert;
  /** Default 365. */
  days?: number;
}

export interface Pkcs12Options {
  /** The certificate whose private key goes in; omitted, the bundle holds no key. */
  key?: IssuedCert;
  /** In bundle order; the one matching `key` becomes the bundle's own certificate. */
  certs?: IssuedCert[];
  /** Default empty, as Kubernetes and most tools write it. Unused with `plain`. */
  passphrase?: string;
  /** RC2-40 certificates and 3DES keys with a SHA-1 MAC (`openssl pkcs12 -legacy`). */
  legacy?: boolean;
  /** Nothing encrypted and no MAC. */
  plain?: boolean;
  /** Key-derivation iterations of the encryption and the MAC; OpenSSL's default is 2048. */
  iterations?: number;
}

export interface CrlOptions {
  /** Until the next update; default 30. */
  days?: number;
  der?: boolean;
}

export interface TestPki {
  dir: string;
  root: IssuedCert;
  intermediate: IssuedCert;
  ca(cn: string, issuer?: IssuedCert): IssuedCert;
  leaf(options: LeafOptions): IssuedCert;
  pkcs12(options: Pkcs12Options): Buffer;
  keyAs(cert: IssuedCert, form: KeyForm, passphrase?: string): string;
  /** PEM unless `der`; a Buffer either way. */
  crl(ca: IssuedCert, revoked?: IssuedCert[], options?: CrlOptions): Buffer;
  remove(): void;
}

const CA_DAYS = 3650;
const PASS_VAR = 'OSTIA_TEST_PKI_PASSPHRASE';

const NEW_KEY: Record<Exclude<KeyKind, 'dsa2048'>, string[]> = {
  rsa2048: ['-newkey', 'rsa:2048'],
  rsa1024: ['-newkey', 'rsa:1024'],
  'ec-p256': ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  'ec-p384': ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-384'],
  'ec-secp256k1': ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:secp256k1'],
  ed25519: ['-newkey', 'ed25519'],
};

/** CAs default to P-256: RSA key generation would dominate a test's run time. */
export function createTestPki(options: { caKey?: KeyKind } = {}): TestPki {
  const caKey = options.caKey ?? 'ec-p256';
  const dir = mkdtempSync(join(tmpdir(), 'ostia-pki-'));
  let files = 0;
  let dsaParams: string | undefined;

  const newKey = (kind: KeyKind): string[] => {
    if (kind !== 'dsa2048') return NEW_KEY[kind];
    // Generating DSA parameters takes seconds; one set serves every DSA key of this PKI.
    if (!dsaParams) {
      dsaParams = join(dir, 'dsa2048.params');
      openssl(['genpkey', '-genparam', '-algorithm', 'DSA', '-pkeyopt', 'dsa_paramgen_bits:2048', '-out', dsaParams]);
    }
    return ['-newkey', `dsa:${dsaParams}`];
  };

  /** One openssl run makes the key and the certificate; OpenSSL 3 gives it a random serial number. */
  const issue = (cn: string, kind: KeyKind, issuer: IssuedCert | undefined, days: number, extensions: string[]): IssuedCert => {
    const base = join(dir, `${++files}-${cn.replace(/[^A-Za-z0-9.-]+/g, '_')}`);
    const keyPath = `${base}.key`;
    const certPath = `${base}.pem`;
    const configPath = `${base}.cnf`;
    // The whole config, so the system's openssl.cnf adds no extension of its own.
    writeFileSync(configPath, ['[req]', 'distinguished_name = dn', '[dn]', '[ext]', ...extensions, ''].join('\n'));
    openssl([
      'req', '-x509', '-config', configPath, '-extensions', 'ext', ...newKey(kind), '-noenc', '-keyout', keyPath,
      '-subj', `/CN=${cn.replace(/[\\/+=]/g, '\\$&')}`, '-days', String(days),
      ...(issuer ? ['-CA', issuer.certPath, '-CAkey', issuer.keyPath] : []), '-out', certPath,
    ]);
    return {
      cn,
      subject: `CN=${cn}`,
      key: kind,
      certPem: readFileSync(certPath, 'utf8'),
      keyPem: readFileSync(keyPath, 'utf8'),
      certPath,
      keyPath,
    };
  };

  const ca = (cn: string, issuer?: IssuedCert): IssuedCert => issue(cn, caKey, issuer, CA_DAYS, [
    'basicConstraints = critical, CA:TRUE',
    'keyUsage = critical, keyCertSign, cRLSign',
    'subjectKeyIdentifier = hash',
    'authorityKeyIdentifier = keyid:always',
  ]);

  const root = ca('Ostia Test Root CA');
  const intermediate = ca('Ostia Test Intermediate CA', root);

  return {
    dir,
    root,
    intermediate,
    ca,

    leaf({ cn, dnsNames = [], ipAddresses = [], key = 'rsa2048', issuer = intermediate, days = 365 }) {
      const altNames = [...dnsNames.map((name) => `DNS:${name}`), ...ipAddresses.map((address) => `IP:${address}`)];
      return issue(cn, key, issuer, days, [
        'basicConstraints = critical, CA:FALSE',
        // RSA key exchange (TLS 1.2 without ECDHE) encrypts to the key; everything else only signs.
        `keyUsage = critical, digitalSignature${key.startsWith('rsa') ? ', keyEncipherment' : ''}`,
        'extendedKeyUsage = serverAuth, clientAuth',
        'subjectKeyIdentifier = hash',
        'authorityKeyIdentifier = keyid:always',
        ...(altNames.length > 0 ? [`subjectAltName = ${altNames.join(', ')}`] : []),
      ]);
    },

    pkcs12({ key, certs = [], passphrase = '', legacy = false, plain = false, iterations }) {
      const args = ['pkcs12', '-export', '-passout', `env:${PASS_VAR}`];
      args.push(...(key ? ['-inkey', key.keyPath] : ['-nokeys']));
      if (certs.length === 0) args.push('-nocerts');
      if (legacy) args.push('-legacy');
      if (plain) args.push('-keypbe', 'NONE', '-certpbe', 'NONE', '-nomac');
      if (iterations !== undefined) args.push('-iter', String(iterations));
      return openssl(args, { input: certs.map((cert) => cert.certPem).join(''), passphrase });
    },

    keyAs(cert, form, passphrase) {
      if (form === 'pkcs8') return cert.keyPem;
      const encrypted = form.endsWith('-encrypted');
      if (encrypted && passphrase === undefined) throw new Error(`keyAs(${form}) needs a passphrase`);
      const args = ['pkey', '-in', cert.keyPath];
      if (form.startsWith('traditional')) args.push('-traditional');
      if (encrypted) args.push('-aes-256-cbc', '-passout', `env:${PASS_VAR}`);
      return openssl(args, { passphrase }).toString('utf8');
    },

    crl(issuer, revoked = [], { days = 30, der = false } = {}) {
      // A fresh database per CRL, so it lists exactly `revoked`.
      const db = mkdtempSync(join(dir, 'crl-'));
      const config = join(db, 'ca.cnf');
      writeFileSync(join(db, 'index.txt'), '');
      writeFileSync(join(db, 'crlnumber'), '01\n');
      writeFileSync(config, [
        '[ca]', 'default_ca = crl', '[crl]',
        `database = ${join(db, 'index.txt')}`,
        `crlnumber = ${join(db, 'crlnumber')}`,
        'default_md = default',
        '',
      ].join('\n'));
      const caCommand = ['ca', '-config', config, '-keyfile', issuer.keyPath, '-cert', issuer.certPath];
      for (const cert of revoked) openssl([...caCommand, '-revoke', cert.certPath]);
      const pem = openssl([...caCommand, '-gencrl', '-crldays', String(days)]);
      return der ? openssl(['crl', '-outform', 'DER'], { input: pem }) : pem;
    },

    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * One bundle holding the contents of all `bundles` (say, two keys, which the openssl CLI
 * cannot write), without a MAC: give it bundles made with `plain: true`.
 */
export function mergePkcs12(bundles: Buffer[]): Buffer {
  const { asn1 } = forge;
  const { Class, Type } = asn1;
  const children = (node: forge.asn1.Asn1) => node.value as forge.asn1.Asn1[];
  // PFX = { version, authSafe: ContentInfo { data, [0] { OCTET STRING = DER of SEQUENCE OF ContentInfo } }, mac? }
  const contents = bundles.flatMap((bundle) => {
    const [, authSafe] = children(asn1.fromDer(bundle.toString('binary')));
    const [octets] = children(children(authSafe)[1]);
    return children(asn1.fromDer(octets.value as string));
  });
  const authenticatedSafe = asn1.toDer(asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, contents)).getBytes();
  const pfx = asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [
    asn1.create(Class.UNIVERSAL, Type.INTEGER, false, asn1.integerToDer(3).getBytes()),
    asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, [
      asn1.create(Class.UNIVERSAL, Type.OID, false, asn1.oidToDer(forge.pki.oids.data).getBytes()),
      asn1.create(Class.CONTEXT_SPECIFIC, 0, true, [
        asn1.create(Class.UNIVERSAL, Type.OCTETSTRING, false, authenticatedSafe),
      ]),
    ]),
  ]);
  return Buffer.from(asn1.toDer(pfx).getBytes(), 'binary');
}

/**
 * Runs openssl, failing with its stderr. A passphrase reaches it through the environment rather
 * than argv, so it shows neither in `ps` nor in the failure's message, which quotes the command.
 */
function openssl(args: string[], options: { input?: string | Buffer; passphrase?: string } = {}): Buffer {
  return execFileSync('openssl', args, {
    input: options.input,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: options.passphrase === undefined ? process.env : { ...process.env, [PASS_VAR]: options.passphrase },
  });
}
