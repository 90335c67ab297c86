/**
 * The renderer on representative load balancers: pinned golden files, checked by the real
 * `haproxy -c` (no warning allowed), and the rules that decide what is rendered.
 * OSTIA_UPDATE_GOLDEN=1 rewrites the golden files from the current renderer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../../test/support/ostia-process.js';
import type { AmphoraConfig } from '../../domain/amphora-config.js';
import { RenderError } from './encoders.js';
import { backendName, frontendName, parseBackendName, parseFrontendName, parseServerName, serverName } from './names.js';
import { renderedBackends, renderHaproxyConfig, rendersTlsAlpn01 } from './render.js';
import * as fx from '../../../test/support/render-fixtures.js';
import { parseConfig } from '../../../test/support/haproxy-words.js';
import { tlsFiles, type TlsFileKind } from './tls-files.js';
import { createTestPki } from '../../../test/support/test-pki.js';
import { unmet } from '../../../test/support/requirements.js';

const HAPROXY = '/usr/sbin/haproxy';
const goldenDir = join(repoRoot(), 'src/amphora-agent/haproxy/golden');

let material: Record<TlsFileKind, string> | undefined;
/** A certificate with its chain and key, the CA bundle it chains to, a CRL: made once, on first use. */
function realMaterial(): Record<TlsFileKind, string> {
  if (material) return material;
  const pki = createTestPki();
  try {
    const leaf = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'], key: 'ec-p256' });
    material = { cert: leaf.certPem + pki.intermediate.certPem + leaf.keyPem, 'ca-file': pki.intermediate.certPem + pki.root.certPem, 'crl-file': pki.crl(pki.intermediate).toString() };
    return material;
  } finally {
    pki.remove();
  }
}

const render = (config: AmphoraConfig) => renderHaproxyConfig(config, fx.goldenPaths(config.amphoraId), fx.goldenOptions);

/** The directives of one section (`frontend <name>` / `backend <name>`), as word lists. */
function section(cfg: string, header: string): string[][] {
  const lines = parseConfig(cfg);
  const start = lines.findIndex((words) => words.join(' ') === header);
  assert.ok(start >= 0, `no section ${header}`);
  const end = lines.findIndex((words, i) => i > start && ['global', 'defaults', 'frontend', 'backend'].includes(words[0]!));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

const sectionHeaders = (cfg: string) => parseConfig(cfg).filter((w) => ['global', 'defaults', 'frontend', 'backend'].includes(w[0]!)).map((w) => w.join(' '));

function refusedOn(config: AmphoraConfig, field: RegExp): void {
  assert.throws(() => render(config), (e: unknown) => e instanceof RenderError && field.test(e.field));
}

for (const [name, make] of Object.entries(fx.goldenConfigs)) {
  test(`golden: ${name}`, () => {
    const file = join(goldenDir, `${name}.cfg`);
    const text = render(make());
    if (process.env.OSTIA_UPDATE_GOLDEN === '1') writeFileSync(file, text);
    assert.equal(text, readFileSync(file, 'utf8'));
    assert.equal(render(make()), text, 'rendering is deterministic');
  });

  test(`haproxy -c accepts ${name} without a warning`, { skip: unmet('haproxy') }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'ostia-haproxy-'));
    try {
      const paths = fx.scratchPaths(dir);
      // A state file as `show servers state` writes it (version line), so its absence is no warning.
      writeFileSync(paths.stateFile, '1\n');
      // HAProxy loads every TLS file it is given: real material in place of the golden placeholders.
      mkdirSync(paths.tlsDir);
      writeFileSync(paths.acmeMap, '');
      // An empty challenge list is valid but warned about: one challenge certificate, as the agent adds them.
      writeFileSync(join(paths.tlsDir, 'challenge.pem'), realMaterial().cert);
      writeFileSync(paths.acmeAlpnCrtList, `${join(paths.tlsDir, 'challenge.pem')}\n`);
      for (const file of tlsFiles(make())) writeFileSync(join(paths.tlsDir, file.name), realMaterial()[file.kind]);
      writeFileSync(join(dir, 'haproxy.cfg'), renderHaproxyConfig(make(), paths, fx.goldenOptions));
      const out = execFileSync(HAPROXY, ['-c', '-f', join(dir, 'haproxy.cfg')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      assert.match(out, /Configuration file is valid/);
      assert.doesNotMatch(out, /WARNING|ALERT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('the TLS-ALPN-01 relay is rendered only while a validation is under way: otherwise the listener binds the VIP itself', () => {
  const config = fx.goldenConfigs['acme-tls-alpn-01']!();
  const idle = renderHaproxyConfig(config, fx.goldenPaths(config.amphoraId), { ...fx.goldenOptions, tlsAlpn01Answering: false });
  assert.equal(idle, render({ ...config, acmeTlsAlpn01: false }));
  assert.doesNotMatch(idle, /acme-tls-alpn-01|abns@/);
  assert.match(render(config), /frontend acme-tls-alpn-01-relay/);
  assert.equal(rendersTlsAlpn01(config, fx.goldenOptions), true);
  assert.equal(rendersTlsAlpn01(config, { ...fx.goldenOptions, tlsAlpn01Answering: false }), false);
});

test('names are the ids and parse back', () => {
  const [listenerId, poolId, memberId] = [fx.ids.listener(1), fx.ids.pool(2), fx.ids.member(3)];
  assert.equal(parseFrontendName(frontendName(listenerId)), listenerId);
  assert.deepEqual(parseBackendName(backendName(poolId, listenerId)), { poolId, listenerId });
  assert.equal(parseServerName(serverName(memberId)), memberId);
  assert.equal(parseServerName('BACKEND'), null);
  assert.equal(parseBackendName(frontendName(listenerId)), null);
  assert.throws(() => serverName('web-1'), RenderError);
});

test('renderedBackends lists one backend per (pool, listener) pair, in file order', () => {
  const config = fx.memberVariety();
  const backends = renderedBackends(config);
  assert.deepEqual(backends, [
    { name: backendName(fx.ids.pool(1), fx.ids.listener(1)), poolId: fx.ids.pool(1), listenerId: fx.ids.listener(1) },
    { name: backendName(fx.ids.pool(1), fx.ids.listener(2)), poolId: fx.ids.pool(1), listenerId: fx.ids.listener(2) },
  ]);
  assert.deepEqual(sectionHeaders(render(config)).filter((h) => h.startsWith('backend ')), backends.map((b) => `backend ${b.name}`));
  assert.deepEqual(renderedBackends(fx.disabledLoadBalancer()), []);
});

test('global: maxconn, admin stats socket, state file, pid file; no user, group, daemon or log', () => {
  const cfg = render(fx.httpWithL7());
  const paths = fx.goldenPaths(fx.ids.amphora(1));
  assert.deepEqual(section(cfg, 'global'), [
    ['maxconn', '8000'],
    ['stats', 'socket', paths.statsSocket, 'mode', '600', 'level', 'admin', 'expose-fd', 'listeners'],
    ['server-state-file', paths.stateFile],
    ['pidfile', paths.pidFile],
    ['hard-stop-after', '60s'],
    ['httpclient.ssl.verify', 'none'],
  ]);
  assert.deepEqual(section(cfg, 'defaults')[0], ['load-server-state-from-file', 'global']);
  assert.doesNotMatch(cfg, /^\s*(user|group|daemon|log)\b/m);
});

test('L7: REJECT, then redirects, then pools, each in position order; disabled and rule-less policies left out', () => {
  const config = fx.httpWithL7();
  const fe = section(render(config), `frontend ${fx.ids.listener(1)}`);
  const actions = fe.filter((w) => ['http-request', 'use_backend'].includes(w[0]!));
  assert.deepEqual(
    actions.map((w) => (w[0] === 'use_backend' ? w[0] : `${w[0]} ${w[1]} ${w[2]}`)),
    ['http-request deny if', 'http-request redirect location', 'http-request redirect prefix', 'use_backend', 'use_backend'],
  );
  assert.deepEqual(actions.filter((w) => w[0] === 'use_backend').map((w) => w[3]), [fx.ids.rule(1), fx.ids.rule(7)], 'pools in position order');
  const acls = fe.filter((w) => w[0] === 'acl').map((w) => w[1]);
  assert.deepEqual(acls, [1, 2, 3, 4, 5, 6, 7, 8, 9].map(fx.ids.rule), 'rules of policies 6 (disabled) and 7 (only a disabled rule) are absent');
  assert.deepEqual(fe.find((w) => w[0] === 'http-request' && w[1] === 'deny'), ['http-request', 'deny', 'if', fx.ids.rule(4), `!${fx.ids.rule(5)}`]);
});

test('L7: a redirect to a disabled pool does not match; its pool gets no backend', () => {
  const config = fx.httpWithL7();
  config.pools[1]!.enabled = false;
  const cfg = render(config);
  assert.doesNotMatch(cfg, /use_backend/);
  assert.equal(renderedBackends(config).length, 1);
});

test('L7 rule criteria: fetches, match methods, -- before values, quoted header values unquoted as in Octavia', () => {
  const fe = section(render(fx.httpWithL7()), `frontend ${fx.ids.listener(1)}`);
  const acl = (n: number) => fe.find((w) => w[0] === 'acl' && w[1] === fx.ids.rule(n))!.slice(2);
  assert.deepEqual(acl(1), ['path', '-m', 'reg', '--', '^/api/v[0-9]+/']);
  assert.deepEqual(acl(2), ['req.cook(beta)', '-m', 'sub', '--', 'yes']);
  assert.deepEqual(acl(3), ['req.hdr(host)', '-i', '-m', 'str', '--', 'old.example.com']);
  assert.deepEqual(acl(5), ['req.hdr(X-Admin-Token)', '-m', 'str', '--', 'let me in']);
  assert.deepEqual(acl(6), ['path_end', '--', 'jpg']);
  assert.deepEqual(acl(7), ['ssl_c_s_dn(CN)', '-m', 'end', '--', '.internal']);
  assert.deepEqual(acl(8), ['ssl_c_verify', 'eq', '0']);
  assert.deepEqual(acl(9), ['ssl_c_used']);
});

test('redirect targets: log-format safe, code defaults to 302', () => {
  const fe = section(render(fx.httpWithL7()), `frontend ${fx.ids.listener(1)}`);
  const redirects = fe.filter((w) => w[1] === 'redirect');
  assert.deepEqual(redirects[0]!.slice(0, 6), ['http-request', 'redirect', 'location', 'https://new.example.com/moved?from=old%%20site', 'code', '301']);
  assert.deepEqual(redirects[1]!.slice(0, 6), ['http-request', 'redirect', 'prefix', 'https://static.example.com', 'code', '302']);
});

test('frontend: connection limit capped by maxconn, -1 leaves it out; inspect delay only when set', () => {
  const tcp = section(render(fx.tcpWithSourceIp()), `frontend ${fx.ids.listener(1)}`);
  assert.deepEqual(tcp.slice(0, 5), [['mode', 'tcp'], ['bind', '203.0.113.10:5432'], ['maxconn', '500'], ['timeout', 'client', '3600000'], ['tcp-request', 'inspect-delay', '2000']]);
  assert.deepEqual(section(render(fx.httpWithL7()), `frontend ${fx.ids.listener(1)}`)[3], ['maxconn', '8000']);
  const unlimited = section(render(fx.memberVariety()), `frontend ${fx.ids.listener(1)}`);
  assert.ok(!unlimited.some((w) => w[0] === 'maxconn' || w[0] === 'tcp-request'));
});

test('allowed CIDRs: normalised, deduplicated, split so no line exceeds 64 words', () => {
  const config = fx.tcpWithSourceIp();
  config.listeners[0]!.allowedCidrs = [...Array.from({ length: 70 }, (_, i) => `10.${i}.0.1/16`), '10.0.0.0/16'];
  const fe = section(render(config), `frontend ${fx.ids.listener(1)}`);
  const acls = fe.filter((w) => w[0] === 'acl');
  assert.deepEqual(acls.map((w) => w.length), [35, 35, 9]);
  assert.equal(acls[0]![3], '10.0.0.0/16');
  assert.deepEqual(fe.find((w) => w[0] === 'tcp-request' && w[1] === 'connection'), ['tcp-request', 'connection', 'reject', 'if', '!allowed-cidrs']);
});

test('backends: algorithm, persistence per mode, PROXY protocol, TLS-HELLO and PING checks', () => {
  const tcp = render(fx.tcpWithSourceIp());
  const sourceIp = section(tcp, `backend ${backendName(fx.ids.pool(1), fx.ids.listener(1))}`);
  assert.deepEqual(sourceIp.slice(1, 3), [['balance', 'source'], ['hash-type', 'consistent']]);
  assert.ok(sourceIp.some((w) => w.join(' ') === 'stick on src'));
  assert.ok(sourceIp.filter((w) => w[0] === 'server').every((w) => w.includes('send-proxy')));
  const tlsHello = section(tcp, `backend ${backendName(fx.ids.pool(2), fx.ids.listener(2))}`).find((w) => w[0] === 'server')!;
  assert.deepEqual(tlsHello.slice(-3), ['check-ssl', 'verify', 'none']);
  assert.ok(tlsHello.includes('send-proxy-v2') && !tlsHello.includes('ssl'), 'pass-through: no TLS to the member, only in the check');

  // The pool shared by an HTTP and a TCP listener: cookie persistence only where HTTP is spoken.
  const shared = fx.memberVariety();
  shared.pools[0]!.sessionPersistence = { type: 'HTTP_COOKIE', cookieName: null };
  const cfg = render(shared);
  const httpServers = section(cfg, `backend ${backendName(fx.ids.pool(1), fx.ids.listener(1))}`).filter((w) => w[0] === 'server');
  const tcpBackend = section(cfg, `backend ${backendName(fx.ids.pool(1), fx.ids.listener(2))}`);
  assert.ok(httpServers.every((w) => w[w.indexOf('cookie') + 1] === w[1]));
  assert.ok(!tcpBackend.some((w) => w.includes('cookie')));
});

test('members: backup, weight 0, disabled, monitor address and port; PING delay 0 checks every second', () => {
  const servers = section(render(fx.memberVariety()), `backend ${backendName(fx.ids.pool(1), fx.ids.listener(1))}`).filter((w) => w[0] === 'server');
  const line = (n: number) => servers.find((w) => w[1] === fx.ids.member(n))!.slice(2).join(' ');
  assert.equal(line(1), '10.0.1.1:8080 weight 1 check inter 1000 fall 3 rise 2');
  assert.equal(line(2), '10.0.1.2:8080 weight 1 backup check inter 1000 fall 3 rise 2');
  assert.equal(line(3), '10.0.1.3:8080 weight 0 check inter 1000 fall 3 rise 2');
  assert.equal(line(4), '10.0.1.4:8080 weight 1 check inter 1000 fall 3 rise 2 addr 10.0.2.4 port 9000');
  assert.equal(line(5), '[2001:db8::5]:8080 weight 1 check inter 1000 fall 3 rise 2 addr [2001:db8::f] port 9001');
  assert.equal(line(6), '10.0.1.6:8080 weight 256 check inter 1000 fall 3 rise 2 disabled');
});

test('HTTP monitor: method, path, version, Host header, expected codes, timeouts', () => {
  const be = section(render(fx.httpWithL7()), `backend ${backendName(fx.ids.pool(1), fx.ids.listener(1))}`);
  const check = be.filter((w) => ['option', 'http-check', 'timeout'].includes(w[0]!) && w[1] !== 'allbackups' && w[1] !== 'forwardfor');
  assert.deepEqual(check, [
    ['timeout', 'connect', '5000'],
    ['timeout', 'server', '50000'],
    ['option', 'httpchk', 'GET', '/healthz?probe=lb', 'HTTP/1.1'],
    ['http-check', 'send', 'hdr', 'Host', 'app.example.com'],
    ['http-check', 'expect', 'status', '200-204'],
    ['timeout', 'check', '3000'],
  ]);
  const config = fx.httpWithL7();
  config.pools[0]!.monitor = fx.monitor(1, { type: 'HTTP' });
  const defaults = section(render(config), `backend ${backendName(fx.ids.pool(1), fx.ids.listener(1))}`);
  assert.ok(defaults.some((w) => w.join(' ') === 'option httpchk GET /'));
  assert.ok(defaults.some((w) => w.join(' ') === 'http-check expect status 200'));
});

test('inserted headers: "true" only, in the backend of an HTTP listener', () => {
  const be = section(render(fx.httpWithL7()), `backend ${backendName(fx.ids.pool(1), fx.ids.listener(1))}`);
  const inserted = be.filter((w) => w.join(' ') === 'option forwardfor' || w[0] === 'http-request').map((w) => w.join(' '));
  assert.deepEqual(inserted, ['option forwardfor', 'http-request set-header X-Forwarded-Port %[dst_port]', 'http-request set-header X-Forwarded-Proto %[ssl_fc,iif(https,http)]']);
});

test('disabled objects and unserved protocols are left out', () => {
  const cfg = render(fx.disabledObjects());
  assert.deepEqual(sectionHeaders(cfg), ['global', 'defaults', `frontend ${fx.ids.listener(2)}`, `frontend ${fx.ids.listener(3)}`, `backend ${backendName(fx.ids.pool(1), fx.ids.listener(3))}`]);
  assert.ok(!section(cfg, `frontend ${fx.ids.listener(2)}`).some((w) => w[0] === 'default_backend'), 'its default pool is disabled');
  assert.ok(section(cfg, `backend ${backendName(fx.ids.pool(1), fx.ids.listener(3))}`).every((w) => !w.includes('check')), 'its monitor is disabled');
  assert.deepEqual(sectionHeaders(render(fx.disabledLoadBalancer())), ['global', 'defaults']);
});

test('refused: what the API or the amphora provider refuses never renders', () => {
  const withPool = (change: (p: AmphoraConfig['pools'][number]) => void) => {
    const c = fx.httpWithL7();
    change(c.pools[0]!);
    return c;
  };
  refusedOn(withPool((p) => (p.algorithm = 'SOURCE_IP_PORT')), /lb_algorithm/);
  refusedOn(withPool((p) => (p.monitor = fx.monitor(9, { type: 'UDP-CONNECT' }))), /type/);
  refusedOn(withPool((p) => (p.protocol = 'UDP')), /protocol/);
  refusedOn(withPool((p) => (p.sessionPersistence = { type: 'APP_COOKIE', cookieName: 'a=b' })), /session_persistence/);
  refusedOn(withPool((p) => (p.members[0]!.address = '10.0.0.1\n    server evil 6.6.6.6:80')), /address/);
  refusedOn(withPool((p) => (p.members.push({ ...p.members[0]! }))), /member id/);
  refusedOn(withPool((p) => (p.monitor!.domainName = 'x.example\nhttp-check expect status 500')), /domain_name/);
  refusedOn(withPool((p) => (p.monitor!.urlPath = '/ok HTTP/1.1\r\nHost: x')), /url_path/);
  refusedOn(withPool((p) => (p.monitor!.httpVersion = 1.0)), /domain_name/);

  const tcpPolicies = fx.tcpWithSourceIp();
  tcpPolicies.listeners[0]!.l7policies = [fx.policy(1, { rules: [fx.rule(1)] })];
  refusedOn(tcpPolicies, /l7policies/);

  const injected = fx.httpWithL7();
  injected.listeners[0]!.l7policies[1]!.redirectUrl = 'https://x.example/\n    use_backend evil';
  refusedOn(injected, /redirect_url/);

  const badRule = fx.httpWithL7();
  badRule.listeners[0]!.l7policies[0]!.rules[0] = fx.rule(1, { type: 'HEADER', key: 'X-A b', compareType: 'EQUAL_TO', value: 'v' });
  refusedOn(badRule, /l7rule .* value/);

  const tooMany = fx.httpWithL7();
  tooMany.listeners[0]!.l7policies[2]!.rules = Array.from({ length: 51 }, (_, i) => fx.rule(100 + i));
  refusedOn(tooMany, /rules/);

  const headers = fx.httpWithL7();
  headers.listeners[0]!.insertHeaders = { 'X-Evil\n': 'true' };
  refusedOn(headers, /insert_headers/);
});

test('numbers: timeouts up to HAProxy\'s 24.8 days; longer, negative or fractional ones refused', () => {
  const config = fx.tcpWithSourceIp();
  config.listeners[0]!.timeouts.clientData = 2 ** 31 - 1;
  assert.ok(section(render(config), `frontend ${fx.ids.listener(1)}`).some((w) => w.join(' ') === 'timeout client 2147483647'));
  config.listeners[0]!.timeouts.clientData = 2 ** 31;
  refusedOn(config, /timeout_client_data/);
  config.listeners[0]!.timeouts.clientData = 1000;
  config.pools[0]!.monitor!.delay = 2147484;
  refusedOn(config, /delay/);
  config.pools[0]!.monitor!.delay = 5;
  config.listeners[0]!.timeouts.memberData = -1;
  refusedOn(config, /timeout_member_data/);
  const weight = fx.memberVariety();
  weight.pools[0]!.members[0]!.weight = 1.5;
  refusedOn(weight, /weight/);
});
