/**
 * The ovn provider in process against a real OVN (the sandbox): what it writes into the
 * Northbound database for each change, that traffic flows through it, that the database's
 * restart and rows changed behind Ostia's back are survived, and that a delete leaves nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startHarness, type Harness } from './support/harness.js';
import { unmet } from './support/requirements.js';
import { BACKENDS, CLIENT, HTTP_PORT, PRIVATE_LS, PRIVATE_SUBNET, PUBLIC_LS, PUBLIC_SUBNET, ROUTER, startOvnLab, tally, UDP_PORT, type OvnLab } from './support/ovn-lab.js';
import { asSet, nbRows } from './support/ovn-rows.js';
import { waitMonitor } from './support/ovn-readiness.js';

async function json<T = Record<string, unknown>>(h: Harness, method: string, url: string, body?: unknown): Promise<T> {
  const res = await h.request(method, url, { body });
  assert.ok(res.statusCode < 300, `${method} ${url} → ${res.statusCode} ${res.body}`);
  return (res.body ? res.json() : {}) as T;
}

interface NbLb {
  protocol: string;
  vips: Record<string, string>;
  external_ids: Record<string, string>;
  health_check: string[];
  ip_port_mappings: Record<string, string>;
  selection_fields: string[];
}

const find = (lab: OvnLab, table: string, columns: readonly string[], ...conditions: string[]) => nbRows(lab.sb, table, columns, ...conditions);
const LB_COLUMNS = ['protocol', 'vips', 'external_ids', 'health_check', 'ip_port_mappings', 'selection_fields'];
const lbRows = async (lab: OvnLab, lbId: string) => (await find(lab, 'Load_Balancer', LB_COLUMNS, `name=${lbId}`)) as unknown as NbLb[];
const asList = (v: unknown): string[] => asSet(v).map(String);

test('the ovn provider writes, serves and removes what upstream would', { skip: unmet('ovn-sandbox'), timeout: 300_000 }, async (t) => {
  const lab = await startOvnLab();
  let h: Harness | undefined;
  try {
    h = await startHarness(lab.config);
    const harness = h;
    const members = (port: number) => Object.values(BACKENDS).map((address) => ({ address, protocol_port: port, subnet_id: PRIVATE_SUBNET }));
    const created = await json<{ loadbalancer: { id: string; vip_address: string; vip_port_id: string; listeners: Array<{ id: string }> } }>(h, 'POST', '/v2/lbaas/loadbalancers', {
      loadbalancer: {
        name: 'web',
        provider: 'ovn',
        vip_subnet_id: PUBLIC_SUBNET,
        listeners: [
          {
            name: 'http',
            protocol: 'TCP',
            protocol_port: 80,
            default_pool: {
              name: 'web-pool',
              protocol: 'TCP',
              lb_algorithm: 'SOURCE_IP_PORT',
              healthmonitor: { type: 'TCP', delay: 2, timeout: 1, max_retries: 1, max_retries_down: 2 },
              members: members(HTTP_PORT),
            },
          },
          { name: 'dns', protocol: 'UDP', protocol_port: 53, default_pool: { name: 'dns-pool', protocol: 'UDP', lb_algorithm: 'SOURCE_IP_PORT', members: members(UDP_PORT) } },
        ],
      },
    });
    const lb = created.loadbalancer;
    assert.equal(await h.settled(lb.id), 'ACTIVE');
    const vip = lb.vip_address;

    await t.test('one row per protocol, named by the load balancer, with the upstream keys', async () => {
      const rows = await lbRows(lab, lb.id);
      assert.deepEqual(rows.map((r) => r.protocol).sort(), ['tcp', 'udp']);
      const tcp = rows.find((r) => r.protocol === 'tcp')!;
      const udp = rows.find((r) => r.protocol === 'udp')!;
      // Members created in one call share a creation time: their order within a key is not part of the contract.
      const sortedVips = (vips: Record<string, string>) => Object.fromEntries(Object.entries(vips).map(([k, v]) => [k, v.split(',').sort().join(',')]));
      assert.deepEqual(sortedVips(tcp.vips), { [`${vip}:80`]: `${BACKENDS.be1}:${HTTP_PORT},${BACKENDS.be2}:${HTTP_PORT}` });
      assert.deepEqual(sortedVips(udp.vips), { [`${vip}:53`]: `${BACKENDS.be1}:${UDP_PORT},${BACKENDS.be2}:${UDP_PORT}` });
      assert.deepEqual(asList(tcp.selection_fields).sort(), ['ip_dst', 'ip_src', 'tp_dst', 'tp_src']);
      assert.deepEqual(asList(udp.selection_fields).sort(), ['ip_dst', 'ip_src', 'tp_dst', 'tp_src']);
      assert.equal(tcp.external_ids['neutron:vip'], vip);
      assert.equal(tcp.external_ids['neutron:vip_port_id'], lb.vip_port_id);
      assert.equal(tcp.external_ids.enabled, 'True');
      assert.equal(tcp.external_ids.lr_ref, ROUTER);
      // As upstream counts: the VIP once, every member once (two in each pool).
      assert.deepEqual(JSON.parse(tcp.external_ids.ls_refs!), { [PUBLIC_LS]: 1, [PRIVATE_LS]: 4 });
      assert.match(tcp.external_ids[Object.keys(tcp.external_ids).find((k) => k.startsWith('listener_'))!]!, /^80:pool_/);
      const memberStatus = JSON.parse(tcp.external_ids['neutron:member_status']!) as Record<string, string>;
      assert.deepEqual(Object.values(memberStatus), ['ONLINE', 'ONLINE']);
      // OVN probes each member through its own switch port, from the subnet's health-check source.
      const source = (await find(lab, 'Logical_Switch_Port', ['type', 'addresses'], `name=ovn-lb-hm-${PRIVATE_SUBNET}`))[0]!;
      assert.equal(source.type, 'localport');
      const sourceIp = String(asList(source.addresses)[0]).split(' ')[1];
      assert.deepEqual(tcp.ip_port_mappings, { [BACKENDS.be1]: `lsp-be1:${sourceIp}`, [BACKENDS.be2]: `lsp-be2:${sourceIp}` });
      const checks = await find(lab, 'Load_Balancer_Health_Check', ['_uuid', 'vip', 'options']);
      assert.equal(checks.length, 1);
      assert.equal(checks[0]!.vip, `${vip}:80`);
      assert.deepEqual(checks[0]!.options, { interval: '2', timeout: '1', success_count: '1', failure_count: '2' });
      assert.deepEqual(asList(tcp.health_check), [checks[0]!._uuid]);
      assert.deepEqual(udp.ip_port_mappings, {});
      // Attached where Neutron's provider attaches: both switches and the router; the VIP port reserved.
      for (const [table, name] of [['Logical_Switch', PUBLIC_LS], ['Logical_Switch', PRIVATE_LS], ['Logical_Router', ROUTER]] as const) {
        const held = asList((await find(lab, table, ['load_balancer'], `name=${name}`))[0]!.load_balancer);
        assert.equal(held.length, 2, `${name} holds ${held.join(',')}`);
      }
      assert.equal((await find(lab, 'Logical_Switch_Port', ['type', 'addresses'], `name=${lb.vip_port_id}`)).length, 1);
    });

    await t.test('TCP and UDP through the VIP reach both backends', async () => {
      await lab.sb.nbctl('--wait=hv', 'sync');
      await lab.sb.httpGets(CLIENT.name, `http://${vip}/`, 1, 5_000); // first connection after programming (reference B.6 item 5)
      assert.deepEqual(Object.keys(tally(await lab.sb.httpGets(CLIENT.name, `http://${vip}/`, 24))).sort(), ['be1', 'be2']);
      assert.deepEqual(Object.keys(tally(await lab.sb.udpAsks(CLIENT.name, vip, 53, 24))).sort(), ['be1', 'be2']);
    });

    const tcpPool = (await json<{ pools: Array<{ id: string; protocol: string }> }>(harness, 'GET', `/v2/lbaas/pools?loadbalancer_id=${lb.id}&protocol=TCP`)).pools[0]!.id;
    const poolMembers = async () => (await json<{ members: Array<{ id: string; address: string }> }>(harness, 'GET', `/v2/lbaas/pools/${tcpPool}/members`)).members;
    await t.test('a disabled member leaves vips and its mapping; enabled again it returns', async () => {
      const be1 = (await poolMembers()).find((m) => m.address === BACKENDS.be1)!;
      await json(harness, 'PUT', `/v2/lbaas/pools/${tcpPool}/members/${be1.id}`, { member: { admin_state_up: false } });
      assert.equal(await harness.settled(lb.id), 'ACTIVE');
      const tcp = (await lbRows(lab, lb.id)).find((r) => r.protocol === 'tcp')!;
      assert.deepEqual(tcp.vips, { [`${vip}:80`]: `${BACKENDS.be2}:${HTTP_PORT}` });
      assert.deepEqual(Object.keys(tcp.ip_port_mappings), [BACKENDS.be2]);
      assert.equal((await json<{ member: { operating_status: string } }>(harness, 'GET', `/v2/lbaas/pools/${tcpPool}/members/${be1.id}`)).member.operating_status, 'OFFLINE');
      await json(harness, 'PUT', `/v2/lbaas/pools/${tcpPool}/members/${be1.id}`, { member: { admin_state_up: true } });
      assert.equal(await harness.settled(lb.id), 'ACTIVE');
      assert.equal(Object.keys((await lbRows(lab, lb.id)).find((r) => r.protocol === 'tcp')!.vips[`${vip}:80`]!.split(',')).length, 2);
    });

    await t.test('refusals are synchronous 501s with the upstream text, and write nothing', async () => {
      const before = await lab.sb.nbctl('--bare', '--columns=_uuid,vips,external_ids', 'list', 'Load_Balancer');
      const res = await harness.request('POST', '/v2/lbaas/pools', { body: { pool: { loadbalancer_id: lb.id, protocol: 'TCP', lb_algorithm: 'ROUND_ROBIN' } } });
      assert.equal(res.statusCode, 501);
      assert.equal(res.json().faultstring, "Provider 'ovn' does not support a requested option: OVN provider does not support ROUND_ROBIN algorithm");
      const mixed = await harness.request('POST', `/v2/lbaas/pools/${tcpPool}/members`, { body: { member: { address: 'fd00::5', protocol_port: 80 } } });
      assert.equal(mixed.statusCode, 501);
      assert.match(mixed.json().faultstring, /mixing IPv4\/IPv6/);
      assert.equal(await lab.sb.nbctl('--bare', '--columns=_uuid,vips,external_ids', 'list', 'Load_Balancer'), before);
    });

    await t.test('a member joining a backend OVN already probes as down is ERROR when its change settles', async () => {
      // No health role runs here: the status can only come from the settling change asking the Southbound.
      await lab.sb.stopServer(lab.servers.get('be1')!);
      try {
        await waitMonitor(lab.sb, BACKENDS.be1, HTTP_PORT, 'offline');
        const second = await json<{ loadbalancer: { id: string } }>(harness, 'POST', '/v2/lbaas/loadbalancers', {
          loadbalancer: {
            provider: 'ovn',
            vip_subnet_id: PUBLIC_SUBNET,
            listeners: [{ protocol: 'TCP', protocol_port: 81, default_pool: { name: 'late', protocol: 'TCP', lb_algorithm: 'SOURCE_IP_PORT', healthmonitor: { type: 'TCP', delay: 2, timeout: 1, max_retries: 1 }, members: members(HTTP_PORT).slice(0, 1) } }],
          },
        });
        assert.equal(await harness.settled(second.loadbalancer.id), 'ACTIVE');
        const tree = (await json<{ statuses: { loadbalancer: { operating_status: string; listeners: Array<{ pools: Array<{ operating_status: string; members: Array<{ operating_status: string }> }> }> } } }>(harness, 'GET', `/v2/lbaas/loadbalancers/${second.loadbalancer.id}/status`)).statuses.loadbalancer;
        const pool = tree.listeners[0]!.pools[0]!;
        assert.deepEqual([pool.members[0]!.operating_status, pool.operating_status, tree.operating_status], ['ERROR', 'ERROR', 'ERROR']);
        assert.equal((await harness.request('DELETE', `/v2/lbaas/loadbalancers/${second.loadbalancer.id}?cascade=true`)).statusCode, 204);
        assert.equal(await harness.settled(second.loadbalancer.id), 'DELETED');
      } finally {
        lab.servers.set('be1', await lab.sb.serveHttp('be1', BACKENDS.be1, HTTP_PORT));
      }
    });

    await t.test('removing the health monitor removes its check, mappings and source port', async () => {
      const hm = (await json<{ pool: { healthmonitor_id: string } }>(harness, 'GET', `/v2/lbaas/pools/${tcpPool}`)).pool.healthmonitor_id;
      const del = await harness.request('DELETE', `/v2/lbaas/healthmonitors/${hm}`);
      assert.equal(del.statusCode, 204);
      assert.equal(await harness.settled(lb.id), 'ACTIVE');
      const tcp = (await lbRows(lab, lb.id)).find((r) => r.protocol === 'tcp')!;
      assert.deepEqual(tcp.ip_port_mappings, {});
      assert.deepEqual(asList(tcp.health_check), []);
      assert.deepEqual(await find(lab, 'Load_Balancer_Health_Check', ['_uuid', 'vip', 'options']), []);
      assert.deepEqual(await find(lab, 'Logical_Switch_Port', ['type', 'addresses'], `name=ovn-lb-hm-${PRIVATE_SUBNET}`), []);
      const statuses = (await json<{ members: Array<{ operating_status: string }> }>(harness, 'GET', `/v2/lbaas/pools/${tcpPool}/members`)).members.map((m) => m.operating_status);
      assert.deepEqual(statuses, ['NO_MONITOR', 'NO_MONITOR']);
    });

    await t.test('a cascade delete removes every row and port it wrote', async () => {
      const del = await harness.request('DELETE', `/v2/lbaas/loadbalancers/${lb.id}?cascade=true`);
      assert.equal(del.statusCode, 204);
      assert.equal(await harness.settled(lb.id), 'DELETED');
      assert.deepEqual(await lbRows(lab, lb.id), []);
      assert.deepEqual(await find(lab, 'Logical_Switch_Port', ['type', 'addresses'], `name=${lb.vip_port_id}`), []);
      for (const name of [PUBLIC_LS, PRIVATE_LS]) assert.deepEqual(asList((await find(lab, 'Logical_Switch', ['load_balancer'], `name=${name}`))[0]!.load_balancer), []);
    });
  } finally {
    await h?.close();
    await lab.close();
  }
});

test('a VIP network that is not an OVN switch is refused at once', { skip: unmet('ovn-sandbox'), timeout: 60_000 }, async () => {
  const lab = await startOvnLab();
  let h: Harness | undefined;
  try {
    const config = structuredClone(lab.config) as { ovn: { networks: unknown[] } };
    config.ovn.networks = config.ovn.networks.slice(1);
    h = await startHarness(config);
    const res = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { provider: 'ovn', vip_subnet_id: PUBLIC_SUBNET } } });
    assert.equal(res.statusCode, 400);
    assert.match(res.json().faultstring, /is not connected to OVN: .*ovn\.networks/);
    assert.equal((await h.runtime.db.kysely.selectFrom('load_balancer').select('id').execute()).length, 0);
  } finally {
    await h?.close();
    await lab.close();
  }
});
