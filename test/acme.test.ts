/**
 * Managed certificates end to end: a real `ostia up` with amphorae (local processes, HAProxy)
 * orders a listener's certificate from Debian's pebble (a real RFC 8555 server), which
 * validates at the VIP, found through pebble-challtestsrv's DNS: TLS-ALPN-01 on port 443 when a
 * TERMINATED_HTTPS listener holds it, HTTP-01 on port 80 (an HTTP listener's, or the amphora's
 * own answerer's). The listener serves a self-signed placeholder first, then pebble's
 * certificate; a renewal asked through the API is served under load with no failed request; a
 * name whose validation cannot succeed is reported on its listener; refused requests leave
 * nothing behind.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { killAll, processesUnder, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { writeAmphoraConfig } from './support/amphora-config.js';
import { eventually, memberSubnetAddress, startBackend, type Backend } from './support/amphora-fixtures.js';
import { createTestPki, type TestPki } from './support/test-pki.js';
import { startPebble, type Pebble } from './support/pebble.js';
import { servedFingerprint } from '../src/providers/amphora/tls-probe.js';

type Obj = Record<string, unknown>;
const DEMO = 'ostia-demo';
const NAME = 'www.acme.test';
const HTTPS_PORT = 443;

describe('managed certificates (ACME) against pebble', { skip: unmet('pebble') || unmet('haproxy'), concurrency: 1 }, () => {
  let dir: string;
  let pki: TestPki;
  let pebble: Pebble;
  let ostia: OstiaProcess;
  let backend: Backend;
  let lbId: string;
  let vip: string;
  let poolId: string;
  /** The HTTPS listener with a managed certificate, created by whichever test needs it first: its create's answer. */
  let managedListener: Promise<Obj> | undefined;
  const ensureListener = (): Promise<Obj> =>
    (managedListener ??= (async () => {
      const created = await api('POST', '/v2/lbaas/listeners', {
        listener: { loadbalancer_id: lbId, protocol: 'TERMINATED_HTTPS', protocol_port: HTTPS_PORT, acme_domains: ['WWW.acme.test'], default_pool_id: poolId },
      });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      return created.json.listener as Obj;
    })());
  const ensureListenerId = async () => String((await ensureListener()).id);
  let root: string;

  async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: Obj }> {
    const res = await fetch(`${ostia.url}${path}`, {
      method,
      headers: { 'x-auth-token': await ostia.token(DEMO), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Obj) : {} };
  }

  /** Held with ?wait= until the object leaves PENDING_*. */
  async function settled(path: string, key: string): Promise<Obj> {
    return eventually(async () => {
      const { status, json } = await api('GET', `${path}?wait=20`);
      assert.equal(status, 200, JSON.stringify(json));
      const obj = json[key] as Obj;
      return String(obj.provisioning_status).startsWith('PENDING_') ? null : obj;
    }, `${path} settled`, 120_000, 10) as Promise<Obj>;
  }

  const managed = async (id: string) => (await api('GET', `/v2/ostia/listeners/${id}/certificate`)).json.managed_certificate as Obj;

  /** The listener once it serves the managed certificate last issued (other than `not`). */
  async function serving(id: string, not: string | null = null): Promise<Obj> {
    return eventually(async () => {
      const cert = await managed(id);
      if (!cert.container_ref || cert.container_ref === not) return null;
      const listener = await settled(`/v2/lbaas/listeners/${id}`, 'listener');
      return listener.default_tls_container_ref === cert.container_ref && listener.provisioning_status === 'ACTIVE' ? cert : null;
    }, `listener ${id} serving a newly issued certificate`, 180_000, 200) as Promise<Obj>;
  }

  /** One HTTPS request on a new connection to the VIP as `NAME`, verified against pebble's root only. */
  function get(): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request(
        { host: vip, port: HTTPS_PORT, servername: NAME, path: '/', ca: root, agent: new Agent({ keepAlive: false }), timeout: 10_000, checkServerIdentity: (_host, cert) => (cert.subjectaltname?.includes(`DNS:${NAME}`) ? undefined : new Error(`not ${NAME}`)) },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`HTTP ${res.statusCode}`))));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end();
    });
  }

  async function containerCount(): Promise<number> {
    const { status, json } = await api('GET', '/key-manager/v1/containers?limit=100');
    assert.equal(status, 200);
    return Number(json.total);
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ostia-acme-'));
    pki = createTestPki();
    pebble = await startPebble(dir, pki);
    const configFile = await writeAmphoraConfig(dir, {
      api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'amphora' },
      // No test here is about failover: a late heartbeat on a loaded machine must not replace the amphora mid-test.
      amphora: { heartbeatTimeoutMs: 30_000 },
      acme: { directoryUrl: pebble.directoryUrl, caFile: pebble.caFile, checkIntervalSeconds: 1, retryMinSeconds: 2, retryMaxSeconds: 4, orderTimeoutSeconds: 120 },
    });
    ostia = await startOstia({ extraArgs: ['--config', configFile] });
    backend = await startBackend('acme-member', memberSubnetAddress());
    root = await pebble.issuingRoot();
    const lb = await api('POST', '/v2/lbaas/loadbalancers', { loadbalancer: { name: 'acme', vip_subnet_id: await ostia.subnetId('public-subnet'), provider: 'amphora' } });
    assert.equal(lb.status, 201, JSON.stringify(lb.json));
    lbId = String((lb.json.loadbalancer as Obj).id);
    vip = String((await settled(`/v2/lbaas/loadbalancers/${lbId}`, 'loadbalancer')).vip_address);
    await pebble.resolve(NAME, vip);
    const pool = await api('POST', '/v2/lbaas/pools', { pool: { loadbalancer_id: lbId, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } });
    assert.equal(pool.status, 201, JSON.stringify(pool.json));
    poolId = String((pool.json.pool as Obj).id);
    await settled(`/v2/lbaas/loadbalancers/${lbId}`, 'loadbalancer');
    const member = await api('POST', `/v2/lbaas/pools/${poolId}/members`, { member: { address: backend.address, protocol_port: backend.port, subnet_id: await ostia.subnetId('private-subnet') } });
    assert.equal(member.status, 201, JSON.stringify(member.json));
    await settled(`/v2/lbaas/loadbalancers/${lbId}`, 'loadbalancer');
  });

  after(async () => {
    await backend?.close();
    if (ostia) {
      killAll(processesUnder(join(ostia.dataDir, 'amphorae')));
      await ostia.stop();
    }
    await pebble?.stop();
    pki?.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves a self-signed placeholder at once, then the certificate pebble issued after validating TLS-ALPN-01 on port 443 of the VIP, port 80 staying closed', { timeout: 300_000 }, async () => {
    const listener = await ensureListener();
    const listenerId = String(listener.id);
    assert.deepEqual(listener.acme_domains, [NAME], 'names are stored in lower case');
    const placeholder = String(listener.default_tls_container_ref);
    assert.match(placeholder, /\/key-manager\/v1\/containers\/[0-9a-f-]{36}$/);

    const cert = await serving(listenerId);
    assert.notEqual(cert.container_ref, placeholder);
    assert.deepEqual(cert.domains, [NAME]);
    assert.equal(cert.failures, 0);
    // A normal certificate container of the listener's project: `openstack secret container list` shows it.
    const container = await api('GET', new URL(String(cert.container_ref)).pathname);
    assert.equal(container.status, 200);
    assert.deepEqual(((container.json.secret_refs as Obj[]).map((s) => s.name) as string[]).sort(), ['certificate', 'intermediates', 'private_key']);

    assert.equal(await get(), 'acme-member', 'a client trusting only pebble\'s root reached the member');
    const served = await servedCertificate(vip, HTTPS_PORT, NAME);
    assert.ok(served.checkHost(NAME));
    assert.equal(Date.parse(served.validTo), Date.parse(String(cert.not_after)));
    assert.equal(await connectError(vip, 80), 'ECONNREFUSED', 'validated on 443: no answerer of its own opened port 80');
    // The relay that told the validation from the listener's clients was there only while it ran.
    const rendered = amphoraConfigs(lbId);
    assert.equal(rendered.length, 1);
    assert.doesNotMatch(rendered[0]!, /acme-tls-alpn-01-relay/);
    assert.match(rendered[0]!, new RegExp(`bind ${vip.replace(/\./g, '\\.')}:443 ssl`));
    // The account key stays in the data directory, owner-only.
    const accountKey = join(ostia.dataDir, 'pki', 'acme-account.key');
    assert.ok(existsSync(accountKey));
    assert.equal(statSync(accountKey).mode & 0o777, 0o600);
  });

  /** The certificate `host:port` serves to `name`. */
  function servedCertificate(host: string, port: number, name: string): Promise<X509Certificate> {
    return new Promise((resolve, reject) => {
      const socket = tlsConnect({ host, port, servername: name, ca: root, checkServerIdentity: () => undefined }, () => {
        resolve(new X509Certificate(socket.getPeerCertificate().raw));
        socket.end();
      });
      socket.on('error', reject);
    });
  }

  /** The haproxy.cfg of each amphora of load balancer `id`, as its agent rendered it last. */
  function amphoraConfigs(id: string): string[] {
    const root = join(ostia.dataDir, 'amphorae');
    return readdirSync(root)
      .map((amphora) => join(root, amphora, 'haproxy.cfg'))
      .filter((file) => existsSync(file))
      .map((file) => readFileSync(file, 'utf8'))
      .filter((text) => text.startsWith(`# Load balancer ${id} `));
  }

  /** The error code of a TCP connection to `host:port`, or null when it connects. */
  function connectError(host: string, port: number): Promise<string | null> {
    return new Promise((resolve) => {
      const socket = createConnection({ host, port }, () => {
        socket.destroy();
        resolve(null);
      });
      socket.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
  }

  it('renews on request under load: the new certificate is served, and no request fails', { timeout: 300_000 }, async () => {
    const listenerId = await ensureListenerId();
    const before = await serving(listenerId);
    const fingerprintBefore = await servedFingerprint(vip, HTTPS_PORT, NAME, AbortSignal.timeout(10_000));
    let ok = 0;
    const failures: string[] = [];
    let running = true;
    const load = (async () => {
      const deadline = Date.now() + 240_000;
      while (running && Date.now() < deadline) {
        await get().then(() => ok++, (e: Error) => failures.push(e.message));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      const renew = await api('PUT', `/v2/ostia/listeners/${listenerId}/certificate/renew`);
      assert.equal(renew.status, 202, JSON.stringify(renew.json));
      assert.equal((renew.json.managed_certificate as Obj).renew_requested, true);
      const after = await serving(listenerId, String(before.container_ref));
      assert.ok(Date.parse(String(after.not_before)) >= Date.parse(String(before.not_before)));
      await eventually(async () => (await servedFingerprint(vip, HTTPS_PORT, NAME, AbortSignal.timeout(10_000))) !== fingerprintBefore, 'the renewed certificate served', 30_000, 100);
    } finally {
      running = false;
      await load;
    }
    assert.deepEqual(failures, [], `${failures.length} of ${ok + failures.length} requests failed`);
    assert.ok(ok >= 10, `only ${ok} requests were made during the renewal`);
  });

  it('reports a name whose validation fails on its listener, which keeps serving its placeholder, and retries', { timeout: 300_000 }, async (t) => {
    // Not registered in pebble's DNS: it resolves to an address where nothing answers.
    const created = await api('POST', '/v2/lbaas/listeners', {
      listener: { loadbalancer_id: lbId, protocol: 'TERMINATED_HTTPS', protocol_port: 8443, acme_domains: ['unreachable.acme.test'], default_pool_id: poolId },
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = String((created.json.listener as Obj).id);
    const placeholder = (created.json.listener as Obj).default_tls_container_ref;
    try {
      const failed = (await eventually(async () => {
        const cert = await managed(id);
        return Number(cert.failures) >= 2 ? cert : null;
      }, 'two failed attempts', 180_000, 200))!;
      assert.match(String(failed.last_error), /unreachable\.acme\.test: validation failed: .+/);
      t.diagnostic(`reported: ${String(failed.last_error)}`);
      assert.ok(failed.next_attempt_at, 'the next attempt is scheduled');
      const listener = await settled(`/v2/lbaas/listeners/${id}`, 'listener');
      assert.equal(listener.provisioning_status, 'ACTIVE');
      assert.equal(listener.default_tls_container_ref, placeholder);
      assert.match(String(listener.status_reason), /^managed certificate for unreachable\.acme\.test not issued: unreachable\.acme\.test: validation failed: .+; attempt \d+, the next at /);
    } finally {
      assert.equal((await api('DELETE', `/v2/lbaas/listeners/${id}`)).status, 204);
      await settled(`/v2/lbaas/loadbalancers/${lbId}`, 'loadbalancer');
    }
  });

  it('refuses what cannot be managed with Octavia\'s error body, leaving no certificate behind; an HTTP listener on port 80 answers the challenges', { timeout: 120_000 }, async () => {
    const listenerId = await ensureListenerId();
    await serving(listenerId);
    const containers = await containerCount();
    const refusals: Array<[Obj, RegExp]> = [
      [{ protocol: 'HTTP', protocol_port: 8080, acme_domains: ['a.acme.test'] }, /TERMINATED_HTTPS listeners only/],
      [{ protocol: 'TERMINATED_HTTPS', protocol_port: 8444, acme_domains: ['*.acme.test'] }, /wildcard needs DNS-01/],
      [{ protocol: 'TERMINATED_HTTPS', protocol_port: 8445, acme_domains: ['a.acme.test'], default_tls_container_ref: String((await managed(listenerId)).container_ref) }, /managed by Ostia/],
    ];
    for (const [fields, message] of refusals) {
      const { status, json } = await api('POST', '/v2/lbaas/listeners', { listener: { loadbalancer_id: lbId, ...fields } });
      assert.equal(status, 400, JSON.stringify(json));
      assert.match(String(json.faultstring), message);
      assert.equal(json.faultcode, 'Client');
    }
    // A load balancer of another provider has no amphora to answer the challenges.
    const noop = await api('POST', '/v2/lbaas/loadbalancers', { loadbalancer: { vip_subnet_id: await ostia.subnetId('public-subnet'), provider: 'noop' } });
    const noopId = String((noop.json.loadbalancer as Obj).id);
    await settled(`/v2/lbaas/loadbalancers/${noopId}`, 'loadbalancer');
    const onNoop = await api('POST', '/v2/lbaas/listeners', { listener: { loadbalancer_id: noopId, protocol: 'TERMINATED_HTTPS', protocol_port: 443, acme_domains: ['b.acme.test'] } });
    assert.equal(onNoop.status, 400);
    assert.match(String(onNoop.json.faultstring), /answered by amphorae; the noop provider has none/);
    assert.equal(await containerCount(), containers, 'no placeholder certificate was left in the key manager');
    // An HTTP listener on port 80 is allowed: it answers the challenges itself.
    const http = await api('POST', '/v2/lbaas/listeners', { listener: { loadbalancer_id: lbId, protocol: 'HTTP', protocol_port: 80, default_pool_id: poolId } });
    assert.equal(http.status, 201, JSON.stringify(http.json));
    await settled(`/v2/lbaas/loadbalancers/${lbId}`, 'loadbalancer');
    // Its frontend now answers HTTP-01 in place of TLS-ALPN-01 on 443.
    const previous = String((await managed(listenerId)).container_ref);
    assert.equal((await api('PUT', `/v2/ostia/listeners/${listenerId}/certificate/renew`)).status, 202);
    await serving(listenerId, previous);
  });

  it('validates HTTP-01 on port 80 by an answerer of the amphora\'s own when no listener holds 443 or 80, and refuses a TCP listener on port 80 then', { timeout: 300_000 }, async () => {
    const name = 'own.acme.test';
    const lb = await api('POST', '/v2/lbaas/loadbalancers', { loadbalancer: { name: 'acme-own-answerer', vip_subnet_id: await ostia.subnetId('public-subnet'), provider: 'amphora' } });
    assert.equal(lb.status, 201, JSON.stringify(lb.json));
    const ownLbId = String((lb.json.loadbalancer as Obj).id);
    const ownVip = String((await settled(`/v2/lbaas/loadbalancers/${ownLbId}`, 'loadbalancer')).vip_address);
    await pebble.resolve(name, ownVip);
    const created = await api('POST', '/v2/lbaas/listeners', { listener: { loadbalancer_id: ownLbId, protocol: 'TERMINATED_HTTPS', protocol_port: 8443, acme_domains: [name] } });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = String((created.json.listener as Obj).id);
    const cert = await serving(id);
    const served = await servedCertificate(ownVip, 8443, name);
    assert.ok(served.checkHost(name));
    assert.equal(Date.parse(served.validTo), Date.parse(String(cert.not_after)));
    // Port 80 is needed for HTTP-01 here, so no other TCP listener may take it.
    const blocked = await api('POST', '/v2/lbaas/listeners', { listener: { loadbalancer_id: ownLbId, protocol: 'TCP', protocol_port: 80 } });
    assert.equal(blocked.status, 400, JSON.stringify(blocked.json));
    assert.match(String(blocked.json.faultstring), /needs port 80 of the VIP for HTTP-01 validation.+or a TERMINATED_HTTPS listener on port 443/);
  });
});
