/**
 * The OVN bench's baseline: the rows of one load balancer (TCP listener, SOURCE_IP_PORT pool,
 * two members) written as the upstream ovn-octavia-provider writes them, one Northbound change
 * per Octavia API step (../shared/reference/ovn.md §A.5, replayed with ovn-nbctl as in §B.4), into
 * the same NB database: Neutron's VIP port, LB create, its switch/router association, listener,
 * pool, then each member (which rebuilds `vips` wholesale). Each step is one `ovn-nbctl` process,
 * so the figure includes process start and the client's read of the tables it needs, as an
 * operator's script pays it; upstream itself keeps one ovsdbapp (IDL) connection open instead.
 */
import { randomUUID } from 'node:crypto';
import { BACKENDS, HTTP_PORT, PRIVATE_LS, PRIVATE_SUBNET, PUBLIC_LS, ROUTER } from '../../test/support/ovn-lab.js';
import type { OvnSandbox } from '../../test/support/ovn-sandbox.js';

/** An OVSDB string literal for ovn-nbctl's value syntax (keys and values with `:`, `,`, `{` need it). */
const q = (s: string) => JSON.stringify(s);
const ext = (key: string, value: string) => `external_ids:${q(key)}=${q(value)}`;

export interface NbctlCreate {
  /** Load_Balancer row uuid, and the VIP port, for the delete. */
  uuid: string;
  vipPort: string;
  ms: number;
  calls: number;
}

/** The upstream sequence for one load balancer with VIP `vip`; resolves with its wall time. */
export async function upstreamStyleCreate(sb: OvnSandbox, vip: string): Promise<NbctlCreate> {
  const lb = randomUUID();
  const vipPort = randomUUID();
  const listener = randomUUID();
  const pool = randomUUID();
  const members = Object.values(BACKENDS).map((ip) => ({ id: randomUUID(), ip }));
  const lsRefs = (n: number) => ext('ls_refs', JSON.stringify({ [PUBLIC_LS]: 1, ...(n && { [PRIVATE_LS]: n }) }));
  let calls = 0;
  const nbctl = (...args: string[]) => {
    calls++;
    return sb.nbctl(...args);
  };
  const t0 = performance.now();
  // Neutron creates the VIP port (the provider asks it to).
  await nbctl('lsp-add', PUBLIC_LS, vipPort, '--', 'set', 'Logical_Switch_Port', vipPort, ext('neutron:port_name', `ovn-lb-vip-${lb}`), ext('neutron:device_owner', 'ovn-lb-vip'), ext('neutron:device_id', lb));
  // loadbalancer create: the row, then its routers and their switches.
  const uuid = await nbctl('create', 'Load_Balancer', `name=${lb}`, ext('neutron:vip', vip), ext('neutron:vip_port_id', vipPort), ext('enabled', 'True'));
  await nbctl('lr-lb-add', ROUTER, uuid, '--', 'ls-lb-add', PUBLIC_LS, uuid, '--', 'ls-lb-add', PRIVATE_LS, uuid, '--', 'set', 'Load_Balancer', uuid, ext('lr_ref', ROUTER), lsRefs(0));
  // listener create: the protocol, the listener key (no pool yet: `vips` stays empty).
  await nbctl('set', 'Load_Balancer', uuid, 'protocol=tcp', ext(`listener_${listener}`, '80:'));
  // pool create: the pool key, the listener pointing at it, the algorithm's selection fields.
  await nbctl('set', 'Load_Balancer', uuid, ext(`pool_${pool}`, ''), ext(`listener_${listener}`, `80:pool_${pool}`), 'selection_fields=ip_dst,ip_src,tp_dst,tp_src');
  // member create, one at a time: the pool key, statuses, refs, and `vips` cleared and rebuilt.
  for (let n = 1; n <= members.length; n++) {
    const these = members.slice(0, n);
    await nbctl(
      'set', 'Load_Balancer', uuid,
      ext(`pool_${pool}`, these.map((m) => `member_${m.id}_${m.ip}:${HTTP_PORT}_${PRIVATE_SUBNET}`).join(',')),
      ext('neutron:member_status', JSON.stringify(Object.fromEntries(these.map((m) => [m.id, 'NO_MONITOR'])))),
      lsRefs(n),
      '--', 'clear', 'Load_Balancer', uuid, 'vips',
      '--', 'set', 'Load_Balancer', uuid, `vips:${q(`${vip}:80`)}=${q(these.map((m) => `${m.ip}:${HTTP_PORT}`).join(','))}`,
    );
  }
  return { uuid, vipPort, ms: performance.now() - t0, calls };
}

/** Removes what upstreamStyleCreate wrote (lb-del also drops the switches' and router's references). */
export async function upstreamStyleDelete(sb: OvnSandbox, c: NbctlCreate): Promise<void> {
  await sb.nbctl('lb-del', c.uuid, '--', 'lsp-del', c.vipPort);
}
