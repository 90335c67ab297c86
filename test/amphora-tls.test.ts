/**
 * Issue 4 end to end: TLS through a real amphora (agent + HAProxy) built by a real `ostia up`,
 * driven by the real `openstack` CLI (secrets and containers through python3-barbicanclient,
 * listeners and pools through python3-octaviaclient). SNI for two names checked with
 * `curl --resolve`; mutual TLS with accepted and rejected clients and the X-SSL headers;
 * re-encryption to HTTPS members that demand the load balancer's client certificate; renewal
 * in place under load with no failed request and no reload; certificates replaced by ones for
 * other names and SNI certificates removed; a rollback when the VIP does not apply a change;
 * the cross-project refusals; keys owner-only on the amphora.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection, createServer as createNetServer } from 'node:net';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { killAll, processesUnder, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { writeAmphoraConfig } from './support/amphora-config.js';
import { OpenstackCli, waitActive } from './support/openstack-cli.js';
import { memberSubnetAddress, randomPort, startBackend, type Backend } from './support/amphora-fixtures.js';
import { createTestPki, type IssuedCert, type TestPki } from './support/test-pki.js';
import { servedFingerprint } from '../src/providers/amphora/tls-probe.js';

const run = promisify(execFile);
const DEMO = 'ostia-demo';
const ALT = 'ostia-alt';
type Obj = Record<string, unknown>;

const fingerprint = (cert: IssuedCert) => new X509Certificate(cert.certPem).fingerprint256;

describe('TLS on the amphora through the openstack CLI', { skip: unmet('openstack-cli'), concurrency: 1 }, () => {
  let ostia: OstiaProcess;
  let cli: OpenstackCli;
  let pki: TestPki;
  let dir: string;
  const backends: Backend[] = [];
  const refs: Record<string, string> = {};
  const certs: Record<string, IssuedCert> = {};
  let lb: Obj;
  let vip: string;
  let pool: Obj;
  let https: Obj;
  const httpsPort = randomPort();
  const mtlsPort = httpsPort + 1;
  const file = (name: string) => join(dir, name);

  const show = (cloud: string, args: string[]) => cli.json<Obj>(cloud, args);
  const amphoraRoot = () => join(ostia.dataDir, 'amphorae');

  /** `curl --resolve host:port:vip https://host:port/`, trusting only the test PKI; resolves with curl's exit code and output. */
  async function curl(host: string, port: number, extra: string[] = []): Promise<{ code: number; body: string; headers: string }> {
    const args = ['-sS', '--max-time', '10', '--resolve', `${host}:${port}:${vip}`, '--cacert', file('trust.pem'), '-D', '-', ...extra, `https://${host}:${port}/`];
    try {
      const { stdout } = await run('curl', args);
      const [headers = '', body = ''] = stdout.split(/\r\n\r\n/);
      return { code: 0, body, headers };
    } catch (e) {
      const failure = e as { code?: number; stderr?: string };
      return { code: failure.code ?? -1, body: failure.stderr ?? '', headers: '' };
    }
  }

  /** The listener as the API shows it: the CLI prints only the columns it knows, and status_reason is an Ostia extension. */
  async function apiListener(id: string): Promise<Obj> {
    const res = await fetch(`${ostia.url}/v2/lbaas/listeners/${id}`, { headers: { 'x-auth-token': await ostia.token(DEMO) } });
    assert.equal(res.status, 200);
    return ((await res.json()) as { listener: Obj }).listener;
  }

  /** Stores a PEM as a text/plain secret through the CLI; returns its ref. */
  async function storePem(name: string, pem: string): Promise<string> {
    const stored = await show(DEMO, ['secret', 'store', '--name', name, '--payload-content-type', 'text/plain', '--payload', pem.trim()]);
    return String(stored['Secret href']);
  }

  /** A certificate container of certificate, key and intermediates, made through the CLI. */
  async function storeContainer(name: string, cert: IssuedCert): Promise<string> {
    const [certificate, privateKey, intermediates] = await Promise.all([
      storePem(`${name}-cert`, cert.certPem),
      storePem(`${name}-key`, cert.keyPem),
      storePem(`${name}-chain`, pki.intermediate.certPem),
    ]);
    const created = await show(DEMO, [
      'secret', 'container', 'create', '--name', name, '--type', 'certificate',
      '--secret', `certificate=${certificate}`, '--secret', `private_key=${privateKey}`, '--secret', `intermediates=${intermediates}`,
    ]);
    return String(created['Container href']);
  }

  /** A PKCS#12 bundle (legacy RC2-40, empty password, as Kubernetes makes them) stored through the CLI. */
  async function storePkcs12(name: string, cert: IssuedCert): Promise<string> {
    const bundle = pki.pkcs12({ key: cert, certs: [cert, pki.intermediate], legacy: true });
    const stored = await show(DEMO, ['secret', 'store', '--name', name, '--payload-content-type', 'application/octet-stream', '--payload-content-encoding', 'base64', '--payload', bundle.toString('base64')]);
    return String(stored['Secret href']);
  }

  /** The secrets and containers every TLS test refers to, stored by whichever test needs them first. */
  let secretsStored: Promise<void> | undefined;
  const ensureSecrets = (): Promise<void> =>
    (secretsStored ??= (async () => {
      [refs.www, refs.www2, refs.api, refs.other, refs.lbClient] = await Promise.all([
        storePkcs12('www', certs.www!),
        storePkcs12('www-renewed', certs.www2!),
        storeContainer('api', certs.api!),
        storeContainer('other', certs.other!),
        storeContainer('lb-client', certs.lbClient!),
      ]);
      [refs.trust, refs.clientsCa] = await Promise.all([storePem('members-ca', pki.intermediate.certPem + pki.root.certPem), storePem('clients-ca', certs.clientsCa!.certPem)]);
      refs.clientsCrl = await storePem('clients-crl', pki.crl(certs.clientsCa!).toString());
    })());

  /**
   * The amphora load balancer, its re-encrypting pool with both members, and the HTTPS listener
   * serving www by default and www and api by SNI, built by whichever test needs them first.
   */
  let httpsBuilt: Promise<void> | undefined;
  const ensureHttps = (): Promise<void> =>
    (httpsBuilt ??= (async () => {
      await ensureSecrets();
      lb = await show(DEMO, ['loadbalancer', 'create', '--name', 'tls', '--provider', 'amphora', '--vip-subnet-id', 'public-subnet', '--wait']);
      vip = String(lb.vip_address);
      pool = await show(DEMO, [
        'loadbalancer', 'pool', 'create', '--loadbalancer', String(lb.id), '--protocol', 'HTTP', '--lb-algorithm', 'ROUND_ROBIN',
        '--enable-tls', '--tls-container-ref', refs.lbClient!, '--ca-tls-container-ref', refs.trust!, '--name', 'reencrypt', '--wait',
      ]);
      for (const b of backends)
        await cli.ok(DEMO, ['loadbalancer', 'member', 'create', '--address', b.address, '--protocol-port', String(b.port), '--subnet-id', 'private-subnet', '--wait', String(pool.id)]);
      https = await show(DEMO, [
        'loadbalancer', 'listener', 'create', '--name', 'https', '--protocol', 'TERMINATED_HTTPS', '--protocol-port', String(httpsPort),
        '--default-tls-container-ref', refs.www!, '--default-pool', String(pool.id), '--insert-headers', 'X-Forwarded-Proto=true',
        '--sni-container-refs', refs.www!, refs.api!, '--wait', String(lb.id),
      ]);
    })());

  /** Waits until the listener leaves its PENDING_ state; returns it as the API shows it. */
  async function listenerSettled(id: string): Promise<Obj> {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const listener = await apiListener(id);
      if (!String(listener.provisioning_status).startsWith('PENDING_')) return listener;
      assert.ok(Date.now() < deadline, `listener ${id} still ${String(listener.provisioning_status)} after 120 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /**
   * Puts the HTTPS listener's certificates (named as in `refs`, which exist only once stored) in
   * the state a test starts from, in one update whatever an earlier test left, ERROR included,
   * and waits for listener and load balancer ACTIVE.
   */
  async function startFromCerts(defaultName: string, sniNames: string[]): Promise<void> {
    await ensureHttps();
    const [defaultRef, ...sniRefs] = [defaultName, ...sniNames].map((name) => refs[name]!);
    const res = await fetch(`${ostia.url}/v2/lbaas/listeners/${String(https.id)}`, {
      method: 'PUT',
      headers: { 'x-auth-token': await ostia.token(DEMO), 'content-type': 'application/json' },
      body: JSON.stringify({ listener: { default_tls_container_ref: defaultRef, sni_container_refs: sniRefs } }),
    });
    assert.equal(res.status, 200, await res.text());
    assert.equal((await listenerSettled(String(https.id))).provisioning_status, 'ACTIVE');
    await waitActive(cli, DEMO, String(lb.id));
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ostia-amphora-tls-'));
    pki = createTestPki();
    certs.www = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'] });
    certs.www2 = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'], key: 'ec-p256' });
    certs.api = pki.leaf({ cn: 'api.example.com', dnsNames: ['api.example.com'], key: 'ec-p256' });
    certs.other = pki.leaf({ cn: 'other.example.com', dnsNames: ['other.example.com'], key: 'ec-p256' });
    const clientsCa = pki.ca('Ostia Test Clients CA');
    const strangersCa = pki.ca('Ostia Test Strangers CA');
    certs.clientsCa = clientsCa;
    certs.alice = pki.leaf({ cn: 'alice', issuer: clientsCa, key: 'ec-p256' });
    certs.mallory = pki.leaf({ cn: 'mallory', issuer: strangersCa, key: 'ec-p256' });
    certs.member = pki.leaf({ cn: 'member.internal', dnsNames: ['member.internal'], key: 'ec-p256' });
    certs.lbClient = pki.leaf({ cn: 'lb-client', key: 'ec-p256' });
    writeFileSync(file('trust.pem'), pki.intermediate.certPem + pki.root.certPem);

    // No test here is about failover: a heartbeat late on a loaded machine must not replace the amphora mid-test.
    const configFile = await writeAmphoraConfig(dir, { amphora: { heartbeatTimeoutMs: 30_000 } });
    ostia = await startOstia({ extraArgs: ['--config', configFile] });
    cli = new OpenstackCli(ostia.cloudsYaml, { concurrency: 4 });
    // HTTPS members that accept only clients holding a certificate of the test PKI.
    for (const name of ['tls-member-a', 'tls-member-b'])
      backends.push(await startBackend(name, memberSubnetAddress(), { certPem: certs.member.certPem + pki.intermediate.certPem, keyPem: certs.member.keyPem, clientCa: pki.intermediate.certPem + pki.root.certPem }));
  });

  after(async () => {
    for (const b of backends) await b.close();
    if (ostia) {
      killAll(processesUnder(amphoraRoot()));
      await ostia.stop();
    }
    pki?.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('stores a PKCS#12 bundle and certificate containers with the barbican client', { timeout: 120_000 }, async () => {
    await ensureSecrets();
    assert.match(refs.www!, /\/key-manager\/v1\/secrets\/[0-9a-f-]{36}$/);
    assert.match(refs.api!, /\/key-manager\/v1\/containers\/[0-9a-f-]{36}$/);
  });

  it('terminates TLS with SNI for two names and re-encrypts to members with its own client certificate', { timeout: 180_000 }, async () => {
    await ensureHttps();
    assert.equal(https.provisioning_status, 'ACTIVE');

    for (const host of ['www.example.com', 'api.example.com']) {
      // curl checks the served certificate against the name: success means the right one answered.
      const r = await curl(host, httpsPort);
      assert.equal(r.code, 0, `${host}: ${r.body}`);
      assert.match(r.body, /^tls-member-[ab]$/, 'a member answered, and curl verified the certificate');
      assert.match(r.headers, /^x-client-cn: lb-client$/im, 'the member saw the load balancer\'s client certificate');
      assert.match(r.headers, /"x-forwarded-proto":"https"/);
    }
    assert.equal(await servedFingerprint(vip, httpsPort, 'api.example.com', AbortSignal.timeout(5000)), fingerprint(certs.api!));
    assert.equal(await servedFingerprint(vip, httpsPort, null, AbortSignal.timeout(5000)), fingerprint(certs.www!), 'clients without SNI get the default certificate');
    assert.equal((await curl('other.example.com', httpsPort)).code, 60, 'a name no certificate covers fails verification');
  });

  it('keeps keys owner-only in the amphora directory and out of haproxy.cfg', { timeout: 180_000 }, async () => {
    await ensureHttps();
    const [amphora] = readdirSync(amphoraRoot());
    const root = join(amphoraRoot(), amphora!);
    const tls = join(root, 'tls');
    assert.equal(statSync(tls).mode & 0o777, 0o700);
    const files = readdirSync(tls);
    assert.ok(files.length >= 4, files.join(' '));
    for (const name of files) assert.equal(statSync(join(tls, name)).mode & 0o777, 0o600, name);
    assert.equal(statSync(join(root, 'applied-config.json')).mode & 0o777, 0o600);
    assert.doesNotMatch(readFileSync(join(root, 'haproxy.cfg'), 'utf8'), /PRIVATE KEY|BEGIN/);
    assert.doesNotMatch(ostia.logTail(), /PRIVATE KEY/);
    assert.doesNotMatch(readFileSync(join(root, 'agent.log'), 'utf8'), /PRIVATE KEY/);
  });

  it('asks for client certificates: a client of the CA is let in and named to members, others are refused', { timeout: 180_000 }, async () => {
    await ensureHttps();
    await cli.ok(DEMO, [
      'loadbalancer', 'listener', 'create', '--name', 'mtls', '--protocol', 'TERMINATED_HTTPS', '--protocol-port', String(mtlsPort),
      '--default-tls-container-ref', refs.www!, '--default-pool', String(pool.id),
      '--client-authentication', 'MANDATORY', '--client-ca-tls-container-ref', refs.clientsCa!, '--client-crl-container-ref', refs.clientsCrl!,
      '--insert-headers', 'X-SSL-Client-Verify=true,X-SSL-Client-CN=true,X-SSL-Client-Has-Cert=true', '--wait', String(lb.id),
    ]);
    const writeKey = (cert: IssuedCert) => ['--cert', cert.certPath, '--key', cert.keyPath];
    const alice = await curl('www.example.com', mtlsPort, writeKey(certs.alice!));
    assert.equal(alice.code, 0, alice.body);
    assert.match(alice.headers, /"x-ssl-client-cn":"alice"/);
    assert.match(alice.headers, /"x-ssl-client-verify":"0"/);
    assert.match(alice.headers, /"x-ssl-client-has-cert":"1"/);
    assert.notEqual((await curl('www.example.com', mtlsPort)).code, 0, 'no client certificate');
    assert.notEqual((await curl('www.example.com', mtlsPort, writeKey(certs.mallory!))).code, 0, 'a certificate of another CA');
  });

  it('renews in place under load: no failed request, no reload, the new certificate served for each name', { timeout: 180_000 }, async () => {
    await ensureHttps();
    const workersBefore = processesUnder(amphoraRoot()).sort();
    const load = loadOnVip(vip, httpsPort, 'www.example.com', readFileSync(file('trust.pem')));
    await load.started;
    await cli.ok(DEMO, ['loadbalancer', 'listener', 'set', '--default-tls-container-ref', refs.www2!, '--sni-container-refs', refs.www2!, refs.api!, '--wait', String(https.id)]);
    const { ok, failed, errors } = await load.stop();
    const renewed = await show(DEMO, ['loadbalancer', 'listener', 'show', String(https.id)]);
    assert.equal(failed, 0, `failed requests during the renewal: ${errors.join('; ')}`);
    assert.ok(ok > 20, `only ${ok} requests went through`);
    assert.equal(renewed.provisioning_status, 'ACTIVE');
    assert.equal(await servedFingerprint(vip, httpsPort, 'www.example.com', AbortSignal.timeout(5000)), fingerprint(certs.www2!));
    assert.equal(await servedFingerprint(vip, httpsPort, 'api.example.com', AbortSignal.timeout(5000)), fingerprint(certs.api!));
    assert.deepEqual(processesUnder(amphoraRoot()).sort(), workersBefore, 'the same HAProxy worker serves: swapped at runtime, not reloaded');
    assert.equal(renewed.default_tls_container_ref, refs.www2);
  });

  /** What the VIP serves for each server name (null: no SNI), as fingerprints. */
  async function servedFor(names: (string | null)[]): Promise<(string | null)[]> {
    return Promise.all(names.map((name) => servedFingerprint(vip, httpsPort, name, AbortSignal.timeout(10_000))));
  }

  /** Both the listener and its load balancer ACTIVE, the listener without a status_reason. */
  async function assertSettled(): Promise<void> {
    const listener = await apiListener(String(https.id));
    assert.deepEqual([listener.provisioning_status, listener.status_reason], ['ACTIVE', null]);
    assert.equal((await show(DEMO, ['loadbalancer', 'show', String(lb.id)])).provisioning_status, 'ACTIVE');
  }

  it('replaces the default certificate with one for another name: served without SNI and for its name, ACTIVE', { timeout: 300_000 }, async () => {
    await startFromCerts('www2', ['www2', 'api']);
    // www2 and api become other, www2 and api: a reload (one slot more).
    await cli.ok(DEMO, ['loadbalancer', 'listener', 'set', '--default-tls-container-ref', refs.other!, '--wait', String(https.id)]);
    await assertSettled();
    assert.equal((await show(DEMO, ['loadbalancer', 'listener', 'show', String(https.id)])).default_tls_container_ref, refs.other);
    assert.deepEqual(await servedFor([null, 'other.example.com', 'unknown.example.org', 'www.example.com', 'api.example.com']), [
      fingerprint(certs.other!), fingerprint(certs.other!), fingerprint(certs.other!), fingerprint(certs.www2!), fingerprint(certs.api!),
    ]);
    const other = await curl('other.example.com', httpsPort);
    assert.equal(other.code, 0, other.body);
    assert.match(other.body, /^tls-member-[ab]$/);
    // other replaced by www in the same slot: swapped at runtime, and other.example.com is no longer indexed.
    const workersBefore = processesUnder(amphoraRoot()).sort();
    await cli.ok(DEMO, ['loadbalancer', 'listener', 'set', '--default-tls-container-ref', refs.www!, '--wait', String(https.id)]);
    await assertSettled();
    assert.deepEqual(processesUnder(amphoraRoot()).sort(), workersBefore, 'swapped at runtime, not reloaded');
    assert.deepEqual(await servedFor([null, 'other.example.com', 'api.example.com']), [fingerprint(certs.www!), fingerprint(certs.www!), fingerprint(certs.api!)]);
    assert.equal((await curl('other.example.com', httpsPort)).code, 60, 'other.example.com is no longer served with its certificate');
  });

  it('replaces and removes SNI certificates: each name the certificate that now covers it, names no longer covered the default', { timeout: 300_000 }, async () => {
    await startFromCerts('www', ['www2', 'api']);
    // Other by default; www2 and api replaced by www alone (a reload: one slot fewer).
    await cli.ok(DEMO, ['loadbalancer', 'listener', 'set', '--default-tls-container-ref', refs.other!, '--sni-container-refs', refs.www!, '--wait', String(https.id)]);
    await assertSettled();
    assert.deepEqual(await servedFor([null, 'www.example.com', 'api.example.com']), [fingerprint(certs.other!), fingerprint(certs.www!), fingerprint(certs.other!)]);
    assert.equal((await curl('api.example.com', httpsPort)).code, 60, 'api.example.com is no longer served with its certificate');
    // www replaced by api in the same slot (swapped at runtime).
    const workersBefore = processesUnder(amphoraRoot()).sort();
    await cli.ok(DEMO, ['loadbalancer', 'listener', 'set', '--sni-container-refs', refs.api!, '--wait', String(https.id)]);
    await assertSettled();
    assert.deepEqual(processesUnder(amphoraRoot()).sort(), workersBefore, 'swapped at runtime, not reloaded');
    assert.deepEqual(await servedFor([null, 'www.example.com', 'api.example.com']), [fingerprint(certs.other!), fingerprint(certs.other!), fingerprint(certs.api!)]);
    // Every SNI certificate removed.
    await cli.ok(DEMO, ['loadbalancer', 'listener', 'unset', '--sni-container-refs', '--wait', String(https.id)]);
    await assertSettled();
    assert.deepEqual((await show(DEMO, ['loadbalancer', 'listener', 'show', String(https.id)])).sni_container_refs, []);
    assert.deepEqual(await servedFor([null, 'api.example.com', 'other.example.com']), [fingerprint(certs.other!), fingerprint(certs.other!), fingerprint(certs.other!)]);
  });

  it('rolls back a change the VIP does not apply, and says why', { timeout: 300_000 }, async () => {
    await startFromCerts('other', []);
    const [amphora] = readdirSync(amphoraRoot());
    // The agent swaps the default certificate through HAProxy's stats socket: an impostor there
    // reports the swap done while HAProxy goes on serving the certificate it had.
    const impostor = await swallowCertificateSwaps(join(amphoraRoot(), amphora!, 'haproxy.sock'));
    try {
      const r = await cli.run(DEMO, ['loadbalancer', 'listener', 'set', '--default-tls-container-ref', refs.www!, '--wait', String(https.id)]);
      assert.notEqual(r.code, 0, 'the CLI waits for ACTIVE and sees ERROR');
      assert.ok(impostor.swallowed() > 0, 'the swap went to the impostor');
    } finally {
      await impostor.close();
    }
    const shown = await show(DEMO, ['loadbalancer', 'listener', 'show', String(https.id)]);
    assert.equal(shown.provisioning_status, 'ERROR');
    assert.equal(shown.default_tls_container_ref, refs.other, 'the previous reference is back');
    assert.match(
      String((await apiListener(String(https.id))).status_reason),
      new RegExp(`^certificate change rolled back: listener .* without a server name served the certificate with SHA-256 fingerprint ${fingerprint(certs.other!)}, expected the default certificate `),
    );
    assert.equal((await show(DEMO, ['loadbalancer', 'show', String(lb.id)])).provisioning_status, 'ACTIVE');
    assert.deepEqual(await servedFor([null]), [fingerprint(certs.other!)]);
    // A listener in ERROR takes the next update, which the VIP applies.
    await cli.ok(DEMO, ['loadbalancer', 'listener', 'set', '--default-tls-container-ref', refs.www!, '--sni-container-refs', refs.www!, refs.api!, '--wait', String(https.id)]);
    await assertSettled();
    assert.deepEqual(await servedFor([null, 'www.example.com', 'api.example.com']), [fingerprint(certs.www!), fingerprint(certs.www!), fingerprint(certs.api!)]);
  });

  it('adds Strict-Transport-Security when HSTS is set through the API', { timeout: 180_000 }, async () => {
    await startFromCerts('www', []);
    const res = await fetch(`${ostia.url}/v2/lbaas/listeners/${String(https.id)}`, {
      method: 'PUT',
      headers: { 'x-auth-token': await ostia.token(DEMO), 'content-type': 'application/json' },
      body: JSON.stringify({ listener: { hsts_max_age: 31536000, hsts_include_subdomains: true } }),
    });
    assert.equal(res.status, 200, await res.text());
    assert.equal((await listenerSettled(String(https.id))).provisioning_status, 'ACTIVE');
    const r = await curl('www.example.com', httpsPort);
    assert.equal(r.code, 0, r.body);
    assert.match(r.headers, /^strict-transport-security: max-age=31536000; includeSubDomains;\r?$/im);
  });

  it('another project can neither read the secrets nor reference them, and learns nothing of them', { timeout: 120_000 }, async () => {
    await ensureSecrets();
    const read = await cli.fails(ALT, ['secret', 'get', refs.www!]);
    assert.match(read, /Forbidden/);
    const altLb = await show(ALT, ['loadbalancer', 'create', '--name', 'alt', '--provider', 'amphora', '--vip-subnet-id', 'public-subnet', '--wait']);
    try {
      const refused = await cli.fails(ALT, [
        'loadbalancer', 'listener', 'create', '--protocol', 'TERMINATED_HTTPS', '--protocol-port', '443', '--default-tls-container-ref', refs.api!, String(altLb.id),
      ]);
      assert.match(refused, new RegExp(`Could not retrieve certificate: \\['${refs.api!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'\\]`));
      assert.doesNotMatch(refused, /example\.com|BEGIN/);
      assert.deepEqual(await cli.json<Obj[]>(ALT, ['loadbalancer', 'listener', 'list', '--loadbalancer', String(altLb.id)]), []);
    } finally {
      await cli.ok(ALT, ['loadbalancer', 'delete', '--cascade', '--wait', String(altLb.id)]);
    }
  });

  it('a cascade delete leaves no process and no key behind', { timeout: 180_000 }, async () => {
    await ensureHttps();
    await cli.ok(DEMO, ['loadbalancer', 'delete', '--cascade', '--wait', String(lb.id)]);
    assert.deepEqual(processesUnder(amphoraRoot()), []);
  });
});

/**
 * Stands between an amphora agent and its HAProxy's stats socket: HAProxy's socket is moved
 * aside (a bound unix socket answers under its new name), and one at its path forwards every
 * command but certificate transactions, which it answers as HAProxy does when they succeed.
 * Closing puts HAProxy's socket back.
 */
async function swallowCertificateSwaps(socketPath: string) {
  const real = `${socketPath}.real`;
  renameSync(socketPath, real);
  let swallowed = 0;
  const server = createNetServer((client) => {
    const chunks: Buffer[] = [];
    client.on('data', (chunk) => chunks.push(chunk));
    client.on('error', () => client.destroy());
    client.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const swap = /^(set|commit) ssl cert (\S+)/.exec(text);
      if (swap) {
        swallowed++;
        client.end(swap[1] === 'set' ? `Transaction created for certificate ${swap[2]}!\n` : `Committing ${swap[2]}\nSuccess!\n`);
        return;
      }
      const haproxy = createConnection(real, () => haproxy.end(text));
      haproxy.pipe(client);
      haproxy.on('error', () => client.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    swallowed: () => swallowed,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      renameSync(real, socketPath);
    },
  };
}

/**
 * New-connection HTTPS requests to `vip:port` for `host`, a few at a time, until stopped (or
 * bounded by count and time): each is a full handshake, so a certificate swap that dropped
 * one would show.
 */
function loadOnVip(vip: string, port: number, host: string, ca: Buffer) {
  const MAX_REQUESTS = 50_000;
  const MAX_MS = 120_000;
  const PARALLEL = 4;
  const started = Date.now();
  let stopping = false;
  let ok = 0;
  let failed = 0;
  const errors: string[] = [];
  let firstOk: () => void;
  const startedPromise = new Promise<void>((resolve) => (firstOk = resolve));
  const once = () =>
    new Promise<void>((resolve) => {
      const req = request({ host: vip, port, servername: host, ca, agent: false, path: '/', timeout: 5000 }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) {
            ok++;
            firstOk();
          } else {
            failed++;
            errors.push(`HTTP ${res.statusCode}`);
          }
          resolve();
        });
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (e) => {
        failed++;
        errors.push(e.message);
        resolve();
      });
      req.end();
    });
  const loops = Array.from({ length: PARALLEL }, async () => {
    while (!stopping && ok + failed < MAX_REQUESTS && Date.now() - started < MAX_MS) await once();
  });
  return {
    started: startedPromise,
    async stop() {
      stopping = true;
      await Promise.all(loops);
      return { ok, failed, errors: [...new Set(errors)].slice(0, 5) };
    },
  };
}
