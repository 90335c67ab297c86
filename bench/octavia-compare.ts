/**
 * Side-by-side behaviour comparison: one scripted lifecycle run against the real Octavia 11 (no-op drivers,
 * `auth_strategy = testing`, see /work/shared/reference/octavia-baseline.md) and against Ostia, both spoken to with
 * Octavia's testing headers (X-Project-Id, X-Roles). Each check records a normalised answer per side (status code,
 * provisioning/operating status, presence of fields, faultstring); the report is a table of Octavia's answer,
 * Ostia's answer and whether they are the same. A bench prints: it exits 0 whatever differs.
 *
 *   npm run bench:octavia -- [--octavia URL] [--start-octavia DIR] [--ostia URL] [--json]
 */
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOstiaServer, type OstiaServer } from '../test/support/ostia-process.js';
import { benchArgs } from './support/args.js';
import { sleep } from './support/poll.js';

const USAGE = `Usage: npm run bench:octavia -- [--octavia URL] [--start-octavia DIR] [--ostia URL]
                                  [--octavia-noop NAME] [--ostia-noop NAME] [--json]

Runs one scripted lifecycle (providers, capabilities, flavors and availability zones, a load balancer with
listener, pool, members up and down, health monitor, L7 policy and rule, amphorae of SINGLE and ACTIVE_STANDBY,
the amphora admin API, the noop provider, policy per role, bad input, paging) against real Octavia 11 and Ostia,
and prints per check Octavia's answer, Ostia's answer and same/different. Ids, timestamps and addresses are
normalised away. Exit code 0 whatever differs.

  --octavia URL        Octavia API with auth_strategy = testing (default: env OCTAVIA_URL, else
                       http://127.0.0.1:19877)
  --start-octavia DIR  when nothing answers at the Octavia URL, start it with DIR/octavia-baseline.sh
                       (setup when needed, start) plus a second uwsgi API with auth_strategy = testing on
                       the --octavia URL's port (env OCT, API_PORT as the script reads them; it
                       leaves OCT/run/uwsgi-testing-PORT.pid, stop it with kill)
  --ostia URL          Ostia API in identity mode testing; without it the bench starts \`ostia up\` from this
                       checkout with ostiaConfig() below and stops it afterwards
  --octavia-noop NAME  Octavia's no-op provider name (default noop_driver)
  --ostia-noop NAME    the no-op provider name on the Ostia side (default noop)
  --json               one JSON document on stdout instead of the table
`;

const SETTLE_TIMEOUT_MS = 90_000;
const POLL_MS = 200;
/** How long a no-op provider load balancer is watched for leaving PENDING_CREATE (Octavia's never does). */
const NOOP_WATCH_MS = 5_000;
const DEEP_LEVELS = 10_000;
const ROLES = [
  '',
  'member',
  'reader',
  'load-balancer_observer',
  'load-balancer_member',
  'load-balancer_global_observer',
  'load-balancer_quota_admin',
  'load-balancer_admin',
  'admin',
] as const;
const MEMBER = 'load-balancer_member';
const ADMIN = 'admin';

/** The Ostia configuration the bench starts `ostia up` with: what the Octavia side runs, Octavia's testing identity and no-op drivers. */
function ostiaConfig(): Record<string, unknown> {
  return {
    identity: { mode: 'testing' },
    network: { driver: 'noop' },
    compute: { driver: 'noop' },
    api: { enabledProviders: ['amphora', 'noop'], defaultProvider: 'amphora' },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP

interface Answer {
  /** 0 when the server closed the connection without an HTTP answer. */
  status: number;
  body: any;
  /** The faultstring of an error body, or the raw text of a non-JSON one. */
  fault: string | null;
}

interface Target {
  readonly name: 'octavia' | 'ostia';
  readonly base: string;
  readonly noop: string;
}

interface CallOpts {
  body?: unknown;
  raw?: string;
  roles?: string;
  /** null: no X-Project-Id header. */
  project?: string | null;
}

/** One request on a fresh connection (uwsgi's http-socket closes every connection after one answer). */
function call(t: Target, method: string, path: string, project: string, opts: CallOpts = {}): Promise<Answer> {
  const payload = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  const headers: Record<string, string> = { accept: 'application/json', connection: 'close' };
  const proj = opts.project === undefined ? project : opts.project;
  if (proj !== null) headers['x-project-id'] = proj;
  const roles = opts.roles ?? MEMBER;
  if (roles) headers['x-roles'] = roles;
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve) => {
    const req = http.request(t.base + path, { method, headers, agent: false, timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: any = null;
        try {
          body = text ? JSON.parse(text) : null;
        } catch {
          body = text;
        }
        const fault = res.statusCode! >= 400 ? (typeof body === 'object' && body ? String(body.faultstring ?? body.description ?? text) : text.trim()) : null;
        resolve({ status: res.statusCode!, body, fault });
      });
      res.on('error', () => resolve({ status: 0, body: null, fault: 'connection closed without an answer' }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: 0, body: null, fault: `no answer (${e.message})` }));
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Checks

interface Observed {
  value: string;
  fault: string | null;
}
type Observations = Map<string, Observed>;

const UUID_RE = /[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}/gi;
/** A faultstring with ids, quotes, case and spacing taken out, for a loose comparison. */
function looseFault(s: string | null): string {
  if (s === null) return '';
  return s.replace(UUID_RE, '<id>').replace(/["'`]/g, '').replace(/\s+/g, ' ').trim().toLowerCase();
}

const stamp = (o: any): string => `updated_at=${o?.updated_at ? 'set' : 'null'}`;
const statuses = (o: any): string => `${o?.provisioning_status ?? '-'}/${o?.operating_status ?? '-'}`;
const inner = (a: Answer, key: string): any => (a.body && typeof a.body === 'object' ? a.body[key] : undefined);

class Run {
  readonly seen: Observations = new Map();
  readonly project = `cmp-${randomUUID().slice(0, 8)}`;
  readonly other = `cmp-other-${randomUUID().slice(0, 8)}`;
  readonly subnet = randomUUID();
  /** What to delete at the end; `watchMs` bounds the wait for one that may never settle (Octavia's no-op provider). */
  readonly lbs: Array<{ id: string; project: string; watchMs?: number }> = [];
  constructor(
    readonly t: Target,
    readonly progress: (m: string) => void,
  ) {}

  req(method: string, path: string, opts: CallOpts = {}): Promise<Answer> {
    return call(this.t, method, path, this.project, opts);
  }
  note(id: string, value: string, fault: string | null = null): void {
    this.seen.set(id, { value, fault });
  }
  /** The answer's code, plus `detail` of it when it succeeded. */
  noteAnswer(id: string, a: Answer, detail?: (a: Answer) => string): void {
    this.note(id, a.status >= 200 && a.status < 300 && detail ? `${a.status} ${detail(a)}` : String(a.status), a.fault);
  }
  noop(name: string): string {
    return name === this.t.noop ? 'noop' : name;
  }

  /** Polls the load balancer until it leaves PENDING_* (or is gone); its last body, or null once 404. */
  async settle(lb: string, project = this.project, timeoutMs = SETTLE_TIMEOUT_MS): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const a = await call(this.t, 'GET', `/v2/lbaas/loadbalancers/${lb}`, project, { roles: ADMIN });
      if (a.status === 404) return null;
      const b = inner(a, 'loadbalancer');
      if (!b || !String(b.provisioning_status).startsWith('PENDING_') || Date.now() > deadline) return b ?? null;
      await sleep(POLL_MS);
    }
  }
  async get(path: string, key: string): Promise<any> {
    return inner(await this.req('GET', path, { roles: ADMIN }), key);
  }
  async createLb(body: Record<string, unknown>, project = this.project, roles = MEMBER): Promise<Answer> {
    const a = await call(this.t, 'POST', '/v2/lbaas/loadbalancers', project, { roles, body: { loadbalancer: { vip_subnet_id: this.subnet, ...body } } });
    const id = inner(a, 'loadbalancer')?.id;
    if (id) this.lbs.push({ id, project });
    return a;
  }
  async cleanup(): Promise<void> {
    for (const { id, project, watchMs } of this.lbs) {
      const b = await this.settle(id, project, watchMs);
      if (b && !String(b.provisioning_status).startsWith('PENDING_'))
        await call(this.t, 'DELETE', `/v2/lbaas/loadbalancers/${id}?cascade=true`, project, { roles: ADMIN });
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The script

async function providers(r: Run): Promise<void> {
  r.progress('providers and capabilities');
  const a = await r.req('GET', '/v2/lbaas/providers');
  const list: Array<{ name: string; description: string }> = inner(a, 'providers') ?? [];
  const names = list.map((p) => r.noop(p.name));
  r.noteAnswer('providers: list', a, () => `amphora ${names.includes('amphora') ? 'listed' : 'absent'}, noop ${names.includes('noop') ? 'listed' : 'absent'}`);
  r.note('providers: a description with a comma', String(list.some((p) => p.description.includes(','))));
  for (const p of ['amphora', r.t.noop]) {
    for (const kind of ['flavor_capabilities', 'availability_zone_capabilities']) {
      const c = await r.req('GET', `/v2/lbaas/providers/${p}/${kind}`, { roles: ADMIN });
      r.noteAnswer(`providers: ${r.noop(p)} ${kind}`, c, (x) => (inner(x, kind) ?? []).map((e: any) => `${e.name}: ${e.description}`).sort().join(' | '));
    }
    const m = await r.req('GET', `/v2/lbaas/providers/${p}/flavor_capabilities`, { roles: MEMBER });
    r.noteAnswer(`providers: ${r.noop(p)} flavor_capabilities as ${MEMBER}`, m);
  }
}

const ARBITRARY_FLAVOR = { loadbalancer_topology: 'ACTIVE_STANDBY', bogus_key: 1 };
const arbitraryAz = () => ({ compute_zone: 'nova', management_network: randomUUID(), valid_vip_networks: [randomUUID()], loadbalancer_topology: 'ACTIVE_STANDBY', bogus_key: 1 });

async function flavorsAndZones(r: Run): Promise<void> {
  r.progress('flavor and availability zone profiles');
  for (const p of ['amphora', r.t.noop]) {
    const fp = await r.req('POST', '/v2/lbaas/flavorprofiles', { roles: ADMIN, body: { flavorprofile: { name: `cmp-${p}`, provider_name: p, flavor_data: JSON.stringify(ARBITRARY_FLAVOR) } } });
    r.noteAnswer(`flavors: ${r.noop(p)} flavor profile with arbitrary metadata`, fp);
    const azp = await r.req('POST', '/v2/lbaas/availabilityzoneprofiles', {
      roles: ADMIN,
      body: { availability_zone_profile: { name: `cmp-${p}`, provider_name: p, availability_zone_data: JSON.stringify(arbitraryAz()) } },
    });
    r.noteAnswer(`flavors: ${r.noop(p)} AZ profile with arbitrary metadata`, azp);
    const known = await r.req('POST', '/v2/lbaas/flavorprofiles', { roles: ADMIN, body: { flavorprofile: { name: `cmp-${p}-as`, provider_name: p, flavor_data: '{"loadbalancer_topology": "ACTIVE_STANDBY"}' } } });
    r.noteAnswer(`flavors: ${r.noop(p)} flavor profile loadbalancer_topology ACTIVE_STANDBY`, known);
    const fpId = inner(known, 'flavorprofile')?.id;
    if (!fpId) continue;
    const fl = await r.req('POST', '/v2/lbaas/flavors', { roles: ADMIN, body: { flavor: { name: `cmp-${r.project}-${r.noop(p)}`, flavor_profile_id: fpId } } });
    r.noteAnswer(`flavors: ${r.noop(p)} flavor create`, fl);
    const show = await r.req('GET', `/v2/lbaas/flavors/${inner(fl, 'flavor')?.id}`, { roles: MEMBER });
    r.noteAnswer(`flavors: ${r.noop(p)} flavor show as ${MEMBER}`, show, (x) => `enabled=${inner(x, 'flavor')?.enabled}`);
    if (p === 'amphora' && inner(fl, 'flavor')) await activeStandby(r, inner(fl, 'flavor').id);
  }
}

/** Roles, statuses and VRRP fields of a load balancer's amphorae, in role order. */
async function amphorae(r: Run, lb: string, id: string): Promise<any[]> {
  const a = await r.req('GET', `/v2/octavia/amphorae?loadbalancer_id=${lb}`, { roles: ADMIN });
  const list: any[] = (inner(a, 'amphorae') ?? []).slice().sort((x: any, y: any) => String(x.role).localeCompare(String(y.role)));
  r.noteAnswer(`${id}: list`, a, () => `${list.length} amphorae`);
  list.forEach((am, i) => {
    r.note(`${id}: #${i} role/status`, `${am.role}/${am.status}`);
    r.note(`${id}: #${i} vrrp`, `vrrp_id=${am.vrrp_id} vrrp_priority=${am.vrrp_priority} vrrp_interface=${am.vrrp_interface} vrrp_ip ${am.vrrp_ip ? 'set' : 'null'} ha_ip ${am.ha_ip ? 'set' : 'null'}`);
    r.note(`${id}: #${i} fields set`, ['compute_id', 'lb_network_ip', 'vrrp_port_id', 'ha_port_id', 'cert_expiration', 'created_at', 'updated_at'].filter((k) => am[k]).join(','));
  });
  return list;
}

async function activeStandby(r: Run, flavor: string): Promise<void> {
  r.progress('ACTIVE_STANDBY load balancer');
  const a = await r.createLb({ name: 'cmp-as', flavor_id: flavor });
  r.noteAnswer('active-standby: LB create', a, (x) => statuses(inner(x, 'loadbalancer')));
  const lb = inner(a, 'loadbalancer')?.id;
  if (!lb) return;
  r.note('active-standby: LB settled', statuses(await r.settle(lb)));
  await amphorae(r, lb, 'active-standby amphorae');
}

async function lifecycle(r: Run): Promise<string | null> {
  r.progress('amphora lifecycle');
  const c = await r.createLb({ name: 'cmp-life' });
  r.noteAnswer('lifecycle: LB create', c, (x) => `${statuses(inner(x, 'loadbalancer'))} ${stamp(inner(x, 'loadbalancer'))} provider=${inner(x, 'loadbalancer').provider}`);
  const lb: string | undefined = inner(c, 'loadbalancer')?.id;
  if (!lb) return null;
  const created = inner(c, 'loadbalancer').created_at;
  const settled = async (what: string) => {
    const b = await r.settle(lb);
    r.note(`lifecycle: LB after ${what}`, b ? `${statuses(b)} ${stamp(b)}` : 'gone');
  };
  await settled('create');

  const paths: Record<string, string> = {};
  const child = async (what: string, key: string, path: string, body: unknown, listPath: string): Promise<string | null> => {
    const a = await r.req('POST', path, { body: { [key]: body } });
    r.noteAnswer(`lifecycle: ${what} create`, a, (x) => `${statuses(inner(x, key))} ${stamp(inner(x, key))}`);
    const id: string | undefined = inner(a, key)?.id;
    await settled(`${what} create`);
    if (!id) return null;
    paths[what] = `${listPath}/${id}`;
    r.note(`lifecycle: ${what} settled`, `${statuses(await r.get(paths[what]!, key))} ${stamp(await r.get(paths[what]!, key))}`);
    return id;
  };
  const li = await child('listener', 'listener', '/v2/lbaas/listeners', { loadbalancer_id: lb, protocol: 'HTTP', protocol_port: 80 }, '/v2/lbaas/listeners');
  if (!li) return lb;
  const pool = await child('pool', 'pool', '/v2/lbaas/pools', { listener_id: li, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' }, '/v2/lbaas/pools');
  if (!pool) return lb;
  r.note('lifecycle: listener after pool create', `${statuses(await r.get(paths.listener!, 'listener'))} ${stamp(await r.get(paths.listener!, 'listener'))}`);
  const members = `/v2/lbaas/pools/${pool}/members`;
  await child('member (admin up)', 'member', members, { address: '192.0.2.10', protocol_port: 8080, subnet_id: r.subnet }, members);
  await child('member (admin down)', 'member', members, { address: '192.0.2.11', protocol_port: 8080, subnet_id: r.subnet, admin_state_up: false }, members);
  r.note('lifecycle: pool after member creates', statuses(await r.get(paths.pool!, 'pool')));
  await child('health monitor', 'healthmonitor', '/v2/lbaas/healthmonitors', { pool_id: pool, type: 'HTTP', delay: 5, timeout: 3, max_retries: 3 }, '/v2/lbaas/healthmonitors');
  for (const m of ['member (admin up)', 'member (admin down)']) if (paths[m]) r.note(`lifecycle: ${m} after HM`, statuses(await r.get(paths[m]!, 'member')));
  r.note('lifecycle: pool after HM', statuses(await r.get(paths.pool!, 'pool')));
  const l7 = await child('L7 policy', 'l7policy', '/v2/lbaas/l7policies', { listener_id: li, action: 'REJECT' }, '/v2/lbaas/l7policies');
  if (l7) await child('L7 rule', 'rule', `/v2/lbaas/l7policies/${l7}/rules`, { type: 'PATH', compare_type: 'STARTS_WITH', value: '/x' }, `/v2/lbaas/l7policies/${l7}/rules`);
  if (paths['member (admin up)']) {
    const down = await r.req('PUT', paths['member (admin up)']!, { body: { member: { admin_state_up: false } } });
    r.noteAnswer('lifecycle: member set admin down', down, (x) => statuses(inner(x, 'member')));
    await settled('member set down');
    r.note('lifecycle: member set down settled', statuses(await r.get(paths['member (admin up)']!, 'member')));
  }
  const upd = await r.req('PUT', paths.listener!, { body: { listener: { name: 'renamed' } } });
  r.noteAnswer('lifecycle: listener update', upd, (x) => `${statuses(inner(x, 'listener'))} ${stamp(inner(x, 'listener'))}`);
  await settled('listener update');
  const keys: Record<string, string> = { listener: 'listener', pool: 'pool', 'member (admin up)': 'member', 'member (admin down)': 'member', 'health monitor': 'healthmonitor', 'L7 policy': 'l7policy', 'L7 rule': 'rule' };
  for (const [what, path] of Object.entries(paths)) {
    const o = await r.get(path, keys[what]!);
    r.note(`lifecycle: final ${what}`, `${statuses(o)} ${stamp(o)}`);
  }
  const lbNow = await r.get(`/v2/lbaas/loadbalancers/${lb}`, 'loadbalancer');
  r.note('lifecycle: LB created_at unchanged', String(lbNow?.created_at === created));
  const tree = await r.req('GET', `/v2/lbaas/loadbalancers/${lb}/status`);
  r.noteAnswer('lifecycle: status tree', tree, (x) => {
    const l = inner(x, 'statuses')?.loadbalancer;
    const p = l?.listeners?.[0]?.pools?.[0];
    return `lb ${statuses(l)} listener ${statuses(l?.listeners?.[0])} pool ${statuses(p)} hm ${statuses(p?.health_monitor)} members ${(p?.members ?? []).map(statuses).join(',')}`;
  });
  const stats = await r.req('GET', `/v2/lbaas/loadbalancers/${lb}/stats`);
  r.noteAnswer('lifecycle: LB stats', stats, (x) => JSON.stringify(inner(x, 'stats')));
  return lb;
}

async function amphoraAdmin(r: Run, lb: string): Promise<void> {
  r.progress('amphora admin API');
  const list = await amphorae(r, lb, 'single amphorae');
  const am = list[0]?.id;
  if (!am) return;
  const base = `/v2/octavia/amphorae/${am}`;
  r.noteAnswer('amphora API: show', await r.req('GET', base, { roles: ADMIN }), (x) => `${inner(x, 'amphora')?.role}/${inner(x, 'amphora')?.status}`);
  r.noteAnswer(`amphora API: show as ${MEMBER}`, await r.req('GET', base));
  r.noteAnswer('amphora API: stats', await r.req('GET', `${base}/stats`, { roles: ADMIN }));
  r.noteAnswer('amphora API: GET config', await r.req('GET', `${base}/config`, { roles: ADMIN }));
  r.noteAnswer('amphora API: PUT config', await r.req('PUT', `${base}/config`, { roles: ADMIN }));
  r.noteAnswer('amphora API: failover', await r.req('PUT', `${base}/failover`, { roles: ADMIN }));
  r.note('amphora API: LB after amphora failover', statuses(await r.settle(lb)));
  const after = await amphorae(r, lb, 'amphorae after amphora failover');
  r.note('amphora API: failover replaced the amphora', String(after.length > 0 && after.every((x) => x.id !== am)));
  r.noteAnswer('amphora API: LB failover', await r.req('PUT', `/v2/lbaas/loadbalancers/${lb}/failover`, { roles: ADMIN }));
  r.note('amphora API: LB after LB failover', statuses(await r.settle(lb)));
  r.noteAnswer('amphora API: unknown amphora', await r.req('GET', `/v2/octavia/amphorae/${randomUUID()}`, { roles: ADMIN }));
}

async function noopProvider(r: Run): Promise<void> {
  r.progress('noop provider');
  const a = await r.createLb({ name: 'cmp-noop', provider: r.t.noop });
  r.noteAnswer('noop provider: LB create', a, (x) => statuses(inner(x, 'loadbalancer')));
  const lb = inner(a, 'loadbalancer')?.id;
  if (!lb) return;
  r.lbs.at(-1)!.watchMs = NOOP_WATCH_MS;
  const b = await r.settle(lb, r.project, NOOP_WATCH_MS);
  r.note(`noop provider: LB after ${NOOP_WATCH_MS / 1000} s`, `${statuses(b)} ${stamp(b)}`);
  r.noteAnswer('noop provider: amphorae', await r.req('GET', `/v2/octavia/amphorae?loadbalancer_id=${lb}`, { roles: ADMIN }), (x) => `${(inner(x, 'amphorae') ?? []).length} amphorae`);
  const li = await r.req('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: lb, protocol: 'HTTP', protocol_port: 80 } } });
  r.noteAnswer('noop provider: listener create', li, (x) => statuses(inner(x, 'listener')));
  const liId = inner(li, 'listener')?.id;
  if (!liId) return;
  await r.settle(lb, r.project, NOOP_WATCH_MS);
  r.note('noop provider: listener settled', statuses(await r.get(`/v2/lbaas/listeners/${liId}`, 'listener')));
  const pool = await r.req('POST', '/v2/lbaas/pools', { body: { pool: { listener_id: liId, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } } });
  const poolId = inner(pool, 'pool')?.id;
  r.noteAnswer('noop provider: pool create', pool, (x) => statuses(inner(x, 'pool')));
  if (!poolId) return;
  await r.settle(lb, r.project, NOOP_WATCH_MS);
  r.note('noop provider: pool settled', statuses(await r.get(`/v2/lbaas/pools/${poolId}`, 'pool')));
  for (const up of [true, false]) {
    const m = await r.req('POST', `/v2/lbaas/pools/${poolId}/members`, { body: { member: { address: up ? '192.0.2.20' : '192.0.2.21', protocol_port: 80, subnet_id: r.subnet, admin_state_up: up } } });
    r.noteAnswer(`noop provider: member admin_state_up=${up} create`, m, (x) => statuses(inner(x, 'member')));
    await r.settle(lb, r.project, NOOP_WATCH_MS);
    const id = inner(m, 'member')?.id;
    if (id) r.note(`noop provider: member admin_state_up=${up} settled`, statuses(await r.get(`/v2/lbaas/pools/${poolId}/members/${id}`, 'member')));
  }
  r.note('noop provider: LB at the end', statuses(await r.get(`/v2/lbaas/loadbalancers/${lb}`, 'loadbalancer')));
}

async function policy(r: Run, ownLb: string | null): Promise<void> {
  r.progress('policy per role');
  const other = await r.createLb({ name: 'cmp-other' }, r.other);
  const otherLb = inner(other, 'loadbalancer')?.id ?? randomUUID();
  await r.settle(otherLb, r.other);
  const own = ownLb ?? randomUUID();
  const endpoints: Array<[string, string, string, unknown?]> = [
    ['GET providers', 'GET', '/v2/lbaas/providers'],
    ['GET flavors', 'GET', '/v2/lbaas/flavors'],
    ['GET availabilityzones', 'GET', '/v2/lbaas/availabilityzones'],
    ['GET flavorprofiles', 'GET', '/v2/lbaas/flavorprofiles'],
    ['GET loadbalancers', 'GET', '/v2/lbaas/loadbalancers'],
    ['GET own LB', 'GET', `/v2/lbaas/loadbalancers/${own}`],
    ["GET other project's LB", 'GET', `/v2/lbaas/loadbalancers/${otherLb}`],
    ['GET loadbalancers?project_id=other', 'GET', `/v2/lbaas/loadbalancers?project_id=${r.other}`],
    ['POST loadbalancer', 'POST', '/v2/lbaas/loadbalancers', { loadbalancer: { vip_subnet_id: r.subnet, name: 'cmp-policy' } }],
    ['GET quotas', 'GET', '/v2/lbaas/quotas'],
    ['GET own quota', 'GET', `/v2/lbaas/quotas/${r.project}`],
    ["GET other project's quota", 'GET', `/v2/lbaas/quotas/${r.other}`],
    ['PUT own quota', 'PUT', `/v2/lbaas/quotas/${r.project}`, { quota: { load_balancer: 50 } }],
    ['GET amphorae', 'GET', '/v2/octavia/amphorae'],
  ];
  for (const role of ROLES) {
    for (const [label, method, path, body] of endpoints) {
      const a = await r.req(method, path, { roles: role, ...(body !== undefined && { body }) });
      const id = inner(a, 'loadbalancer')?.id;
      if (method === 'POST' && id) r.lbs.push({ id, project: r.project });
      const seesOther = label === 'GET loadbalancers' && a.status === 200 ? ` (other project ${(inner(a, 'loadbalancers') ?? []).some((l: any) => l.id === otherLb) ? 'listed' : 'not listed'})` : '';
      r.note(`policy: ${role || '(no role)'} ${label}`, `${a.status}${seesOther}`, a.fault);
    }
  }
  const noProject = await r.req('GET', '/v2/lbaas/loadbalancers', { project: null });
  r.noteAnswer(`policy: ${MEMBER} without X-Project-Id, GET loadbalancers`, noProject);
}

async function badInput(r: Run, lb: string | null): Promise<void> {
  r.progress('bad input');
  const deep = '{"loadbalancer":' + '{"a":'.repeat(DEEP_LEVELS) + '1' + '}'.repeat(DEEP_LEVELS) + '}';
  r.noteAnswer(`bad input: ${DEEP_LEVELS}-level nested JSON`, await r.req('POST', '/v2/lbaas/loadbalancers', { raw: deep }));
  for (const key of ['constructor', '__proto__', 'toString']) {
    const inside = `{"loadbalancer": {"vip_subnet_id": "${r.subnet}", "${key}": {}}}`;
    r.noteAnswer(`bad input: key ${key} in loadbalancer`, await r.req('POST', '/v2/lbaas/loadbalancers', { raw: inside }));
    const top = `{"loadbalancer": {"vip_subnet_id": "${r.subnet}"}, "${key}": 1}`;
    r.noteAnswer(`bad input: key ${key} at top level`, await r.req('POST', '/v2/lbaas/loadbalancers', { raw: top }));
  }
  const vip = async (label: string, body: Record<string, unknown>, detail: (l: any) => string) => {
    const a = await r.createLb(body);
    r.noteAnswer(`bad input: ${label}`, a, (x) => detail(inner(x, 'loadbalancer')));
    const id = inner(a, 'loadbalancer')?.id;
    if (id) r.note(`bad input: ${label}, settled`, statuses(await r.settle(id)));
    return id as string | undefined;
  };
  const kept = (addr: string) => (l: any) => `vip_address ${l.vip_address === addr ? 'as given' : 'other'}`;
  await vip('VIP 10.0.0.0 (network address) on a random subnet', { vip_address: '10.0.0.0' }, kept('10.0.0.0'));
  await vip('VIP 10.0.0.255 (broadcast) on a random subnet', { vip_address: '10.0.0.255' }, kept('10.0.0.255'));
  const fields = (l: any) => ['vip_address', 'vip_subnet_id', 'vip_network_id', 'vip_port_id'].map((k) => `${k} ${l[k] ? 'set' : 'null'}`).join(', ');
  await vip('random vip_network_id alone', { vip_subnet_id: undefined, vip_network_id: randomUUID() }, fields);
  await vip('random vip_port_id alone', { vip_subnet_id: undefined, vip_port_id: randomUUID() }, fields);
  const v6 = await vip('IPv6 vip_address on a random subnet', { vip_address: '2001:db8::5' }, kept('2001:db8::5'));
  if (v6) {
    const li = inner(await r.req('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: v6, protocol: 'HTTP', protocol_port: 80 } } }), 'listener')?.id;
    await r.settle(v6);
    const pool = li && inner(await r.req('POST', '/v2/lbaas/pools', { body: { pool: { listener_id: li, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } } }), 'pool')?.id;
    await r.settle(v6);
    if (pool) {
      const m = await r.req('POST', `/v2/lbaas/pools/${pool}/members`, { body: { member: { address: '2001:db8::10', protocol_port: 8080, subnet_id: randomUUID() } } });
      r.noteAnswer('bad input: IPv6 member on a random subnet', m, (x) => statuses(inner(x, 'member')));
      r.note('bad input: IPv6 member, LB settled', statuses(await r.settle(v6)));
    }
  }
  if (lb) {
    const li = await r.get(`/v2/lbaas/loadbalancers/${lb}`, 'loadbalancer').then((l) => l?.listeners?.[0]?.id);
    for (const url of ['http://a.example:70000/x', 'http://a.example:65535/x']) {
      const a = await r.req('POST', '/v2/lbaas/l7policies', { body: { l7policy: { listener_id: li, action: 'REDIRECT_TO_URL', redirect_url: url } } });
      r.noteAnswer(`bad input: redirect_url ${url}`, a, (x) => statuses(inner(x, 'l7policy')));
      const id = inner(a, 'l7policy')?.id;
      await r.settle(lb);
      if (id) r.note(`bad input: redirect_url ${url}, settled`, statuses(await r.get(`/v2/lbaas/l7policies/${id}`, 'l7policy')));
    }
  }
}

async function paging(r: Run): Promise<void> {
  r.progress('paging');
  const empty = `cmp-empty-${randomUUID().slice(0, 8)}`;
  const links = (x: Answer) => `${(inner(x, 'loadbalancers') ?? []).length > 0 ? 'items' : 'no items'}, links: ${(inner(x, 'loadbalancers_links') ?? []).map((l: any) => l.rel).join(',') || 'none'}`;
  for (const q of ['limit=-1', 'limit=0', 'limit=1', 'limit=abc']) {
    r.noteAnswer(`paging: ?${q} with load balancers`, await r.req('GET', `/v2/lbaas/loadbalancers?${q}`), links);
    if (q !== 'limit=1') r.noteAnswer(`paging: ?${q} in an empty project`, await r.req('GET', `/v2/lbaas/loadbalancers?${q}`, { project: empty }), links);
  }
  const lb = await r.createLb({ name: 'cmp-page' }, empty);
  if (inner(lb, 'loadbalancer')) await r.settle(inner(lb, 'loadbalancer').id, empty);
  r.noteAnswer('paging: ?limit=1 with exactly 1 load balancer', await r.req('GET', '/v2/lbaas/loadbalancers?limit=1', { project: empty }), links);
  r.noteAnswer('paging: ?limit=2 with exactly 1 load balancer', await r.req('GET', '/v2/lbaas/loadbalancers?limit=2', { project: empty }), links);
}

async function runAll(t: Target, progress: (m: string) => void): Promise<Observations> {
  const r = new Run(t, (m) => progress(`${t.name}: ${m}`));
  try {
    await providers(r);
    await flavorsAndZones(r);
    const lb = await lifecycle(r);
    if (lb) await amphoraAdmin(r, lb);
    await noopProvider(r);
    await policy(r, lb);
    await badInput(r, lb);
    await paging(r);
  } finally {
    progress(`${t.name}: cleaning up`);
    await r.cleanup();
  }
  return r.seen;
}

// ---------------------------------------------------------------------------------------------------------------
// Starting the two sides

async function answers(url: string): Promise<boolean> {
  const a = await call({ name: 'octavia', base: url, noop: '' }, 'GET', '/', 'probe');
  return a.status === 200;
}

/** The baseline script's Octavia plus a second uwsgi API with auth_strategy = testing on API_PORT+1. */
async function startOctavia(dir: string, url: string, progress: (m: string) => void): Promise<void> {
  const oct = process.env.OCT ?? '/tmp/octavia-baseline';
  const apiPort = Number(process.env.API_PORT ?? 19876);
  const script = join(dir, 'octavia-baseline.sh');
  const run = (sub: string) => {
    progress(`octavia-baseline.sh ${sub}`);
    const res = spawnSync('bash', [script, sub], { stdio: ['ignore', 'inherit', 'inherit'], env: process.env });
    if (res.status !== 0) throw new Error(`${script} ${sub} failed (exit ${res.status})`);
  };
  if (!existsSync(join(oct, 'etc', 'octavia.conf'))) run('setup');
  if (!(await answers(`http://127.0.0.1:${apiPort}`))) run('start');
  writeFileSync(join(oct, 'etc', 'testing.conf'), '[api_settings]\nauth_strategy = testing\n');
  const port = new URL(url).port || String(apiPort + 1);
  const ini = join(oct, 'etc', `octavia-api-uwsgi-testing-${port}.ini`);
  writeFileSync(
    ini,
    [
      '[uwsgi]',
      `http-socket = 127.0.0.1:${port}`,
      'plugins = python3',
      'wsgi-file = /usr/bin/octavia-wsgi',
      `pyargv = --config-file ${oct}/etc/octavia.conf --config-file ${oct}/etc/testing.conf`,
      'buffer-size = 65535',
      'master = true',
      'lazy-apps = true',
      'die-on-term = true',
      'enable-threads = true',
      'processes = 2',
      'threads = 8',
      'name = octavia-api-testing',
      `chdir = ${oct}`,
      `logto = ${oct}/log/octavia-api-uwsgi-testing-${port}.log`,
      'disable-logging = true',
      `pidfile = ${oct}/run/uwsgi-testing-${port}.pid`,
      '',
    ].join('\n'),
  );
  progress(`starting the testing-mode Octavia API on port ${port}`);
  spawnSync('bash', ['-c', `setsid nohup /usr/bin/uwsgi --ini ${ini} > ${oct}/log/uwsgi-testing-${port}.out 2>&1 < /dev/null &`]);
  const deadline = Date.now() + 180_000;
  while (!(await answers(url))) {
    if (Date.now() > deadline) throw new Error(`the testing-mode Octavia API at ${url} did not answer within 180 s`);
    await sleep(500);
  }
}

async function startOstia(progress: (m: string) => void): Promise<OstiaServer> {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-compare-'));
  const file = join(dir, 'ostia.json');
  writeFileSync(file, JSON.stringify(ostiaConfig(), null, 2));
  progress(`starting ostia up with ${file}`);
  try {
    return await startOstiaServer({ extraArgs: ['--config', file], readyTimeoutMs: 120_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Report

interface Row {
  check: string;
  octavia: string | null;
  ostia: string | null;
  octavia_fault: string | null;
  ostia_fault: string | null;
  /** same: identical normalised answers; text: same answer, faultstrings differ; different; missing: one side never got there. */
  verdict: 'same' | 'text' | 'different' | 'missing';
}

function compare(a: Observations, b: Observations): Row[] {
  const ids = [...a.keys(), ...[...b.keys()].filter((k) => !a.has(k))];
  return ids.map((check) => {
    const x = a.get(check);
    const y = b.get(check);
    const verdict: Row['verdict'] = !x || !y ? 'missing' : x.value !== y.value ? 'different' : looseFault(x.fault) === looseFault(y.fault) ? 'same' : 'text';
    return { check, octavia: x?.value ?? null, ostia: y?.value ?? null, octavia_fault: x?.fault ?? null, ostia_fault: y?.fault ?? null, verdict };
  });
}

function printTable(rows: Row[], octaviaUrl: string, ostiaUrl: string): void {
  const w = [Math.min(70, Math.max(...rows.map((r) => r.check.length))), 44, 44];
  const cut = (s: string, n: number) => (s.length > n ? s.slice(0, n - 1) + '…' : s.padEnd(n));
  console.log(`Octavia: ${octaviaUrl}\nOstia:   ${ostiaUrl}\n`);
  console.log(`${cut('check', w[0]!)}  ${cut('octavia', w[1]!)}  ${cut('ostia', w[2]!)}  verdict`);
  for (const r of rows) {
    console.log(`${cut(r.check, w[0]!)}  ${cut(r.octavia ?? '(not reached)', w[1]!)}  ${cut(r.ostia ?? '(not reached)', w[2]!)}  ${r.verdict}`);
    if (r.verdict === 'text' || (r.verdict === 'different' && (r.octavia_fault || r.ostia_fault)))
      console.log(`${' '.repeat(w[0]! + 2)}octavia: ${r.octavia_fault ?? '-'}\n${' '.repeat(w[0]! + 2)}ostia:   ${r.ostia_fault ?? '-'}`);
  }
  const count = (v: Row['verdict']) => rows.filter((r) => r.verdict === v).length;
  console.log(`\n${rows.length} checks: ${count('same')} same, ${count('text')} same answer with another faultstring, ${count('different')} different, ${count('missing')} reached on one side only`);
}

async function main(): Promise<void> {
  const args = benchArgs({
    octavia: { type: 'string' },
    'start-octavia': { type: 'string' },
    ostia: { type: 'string' },
    'octavia-noop': { type: 'string', default: 'noop_driver' },
    'ostia-noop': { type: 'string', default: 'noop' },
  });
  if (!args) {
    process.stdout.write(USAGE);
    return;
  }
  const progress = (m: string) => process.stderr.write(`[octavia-compare] ${m}\n`);
  const octaviaUrl = (args.octavia ?? process.env.OCTAVIA_URL ?? 'http://127.0.0.1:19877').replace(/\/+$/, '');
  if (!(await answers(octaviaUrl))) {
    if (!args['start-octavia']) throw new Error(`nothing answers at ${octaviaUrl}: start Octavia (see --help) or pass --start-octavia DIR`);
    await startOctavia(args['start-octavia'], octaviaUrl, progress);
  }
  let ostia: OstiaServer | null = null;
  const ostiaUrl = args.ostia?.replace(/\/+$/, '') ?? (ostia = await startOstia(progress)).url;
  try {
    const octaviaSeen = await runAll({ name: 'octavia', base: octaviaUrl, noop: args['octavia-noop'] }, progress);
    const ostiaSeen = await runAll({ name: 'ostia', base: ostiaUrl, noop: args['ostia-noop'] }, progress);
    const rows = compare(octaviaSeen, ostiaSeen);
    if (args.json) console.log(JSON.stringify({ date: new Date().toISOString(), octavia: octaviaUrl, ostia: ostiaUrl, rows }, null, 2));
    else printTable(rows, octaviaUrl, ostiaUrl);
  } finally {
    await ostia?.stop();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`octavia-compare: ${err.message}\n`);
  process.exit(1);
});
