/**
 * A small cloud on the OVN sandbox for the ovn provider's tests and bench: a public network
 * (VIPs and a client host) and a private network (two backends), joined by a router, mapped to
 * Ostia networks in the config the way Neutron's `neutron-<network id>` switches would be.
 */
import { startOvnSandbox, type OvnSandbox, type Server } from './ovn-sandbox.js';

export const PUBLIC_NET = 'a1f0e2d3-0000-4000-8000-00000000000a';
export const PUBLIC_SUBNET = 'a1f0e2d3-0000-4000-8000-00000000001a';
export const PRIVATE_NET = 'b2f0e2d3-0000-4000-8000-00000000000b';
export const PRIVATE_SUBNET = 'b2f0e2d3-0000-4000-8000-00000000001b';
export const PUBLIC_LS = `neutron-${PUBLIC_NET}`;
export const PRIVATE_LS = `neutron-${PRIVATE_NET}`;
export const ROUTER = 'neutron-lab-router';
export const CLIENT = { name: 'cl1', ip: '10.0.0.10' } as const;
export const BACKENDS = { be1: '10.0.1.11', be2: '10.0.1.12' } as const;
export const HTTP_PORT = 8080;
export const UDP_PORT = 5353;

export interface OvnLab {
  sb: OvnSandbox;
  /** Config overrides: the lab's networks, the ovn provider enabled on the sandbox's databases. */
  config: Record<string, unknown>;
  servers: Map<string, Server>;
  close(): Promise<void>;
}

/** The networks and OVN settings for a sandbox (also usable without hosts, e.g. by the bench). */
export function ovnConfig(sb: Pick<OvnSandbox, 'nbRemote' | 'sbRemote'>, providers: string[] = ['ovn', 'noop']): Record<string, unknown> {
  return {
    api: { enabledProviders: providers, defaultProvider: providers[0] },
    network: {
      networks: [
        {
          id: PUBLIC_NET,
          name: 'public',
          projects: [],
          subnets: [{ id: PUBLIC_SUBNET, name: 'public-subnet', cidr: '10.0.0.0/24', gateway_ip: '10.0.0.1', allocation_pools: [{ start: '10.0.0.100', end: '10.0.0.250' }] }],
        },
        {
          id: PRIVATE_NET,
          name: 'private',
          projects: [],
          subnets: [{ id: PRIVATE_SUBNET, name: 'private-subnet', cidr: '10.0.1.0/24', gateway_ip: '10.0.1.1', allocation_pools: [{ start: '10.0.1.200', end: '10.0.1.250' }] }],
        },
      ],
    },
    ovn: {
      nbConnection: sb.nbRemote,
      sbConnection: sb.sbRemote,
      networks: [
        { networkId: PUBLIC_NET, logicalSwitch: PUBLIC_LS },
        { networkId: PRIVATE_NET, logicalSwitch: PRIVATE_LS },
      ],
    },
  };
}

/**
 * LB, TCP listener on 80, SOURCE_IP_PORT pool with the two backends (issue 5's shape, the OVN
 * bench's), as one graph create; `healthmonitor` adds a monitor to the pool.
 */
export function graphBody(name: string, provider: string, healthmonitor?: Record<string, unknown>): unknown {
  return {
    loadbalancer: {
      name,
      provider,
      vip_subnet_id: PUBLIC_SUBNET,
      listeners: [
        {
          name: `${name}-tcp`,
          protocol: 'TCP',
          protocol_port: 80,
          default_pool: {
            name: `${name}-pool`,
            protocol: 'TCP',
            lb_algorithm: 'SOURCE_IP_PORT',
            ...(healthmonitor && { healthmonitor }),
            members: Object.values(BACKENDS).map((address) => ({ address, protocol_port: HTTP_PORT, subnet_id: PRIVATE_SUBNET })),
          },
        },
      ],
    },
  };
}

/** The two switches and the router, as Neutron would have made them. */
export async function addLabTopology(sb: OvnSandbox): Promise<void> {
  await sb.nbctl('ls-add', PUBLIC_LS, '--', 'ls-add', PRIVATE_LS, '--', 'lr-add', ROUTER);
  for (const [ls, lrp, mac, net] of [
    [PUBLIC_LS, 'lrp-public', '0a:00:00:00:01:01', '10.0.0.1/24'],
    [PRIVATE_LS, 'lrp-private', '0a:00:00:00:02:01', '10.0.1.1/24'],
  ] as const) {
    const lsp = `${lrp}-peer`;
    await sb.nbctl('lrp-add', ROUTER, lrp, mac, net, '--', 'lsp-add', ls, lsp, '--', 'lsp-set-type', lsp, 'router', '--', 'lsp-set-addresses', lsp, 'router', '--', 'lsp-set-options', lsp, `router-port=${lrp}`);
  }
}

/** The sandbox with the lab's topology, a client, and two backends serving HTTP and UDP. */
export async function startOvnLab(providers?: string[]): Promise<OvnLab> {
  const sb = await startOvnSandbox();
  const servers = new Map<string, Server>();
  try {
    await addLabTopology(sb);
    await sb.addHost(CLIENT.name, PUBLIC_LS, '0a:00:00:00:00:10', `${CLIENT.ip}/24`, '10.0.0.1');
    let n = 0x11;
    for (const [name, ip] of Object.entries(BACKENDS)) {
      await sb.addHost(name, PRIVATE_LS, `0a:00:00:00:00:${(n++).toString(16)}`, `${ip}/24`, '10.0.1.1');
      servers.set(name, await sb.serveHttp(name, ip, HTTP_PORT));
      servers.set(`${name}-udp`, await sb.serveUdp(name, ip, UDP_PORT));
    }
  } catch (e) {
    await sb.close();
    throw e;
  }
  return { sb, config: ovnConfig(sb, providers), servers, close: () => sb.close() };
}

/** Answers per responder: `{be1: 12, be2: 12}`. */
export function tally(answers: readonly string[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const a of answers) t[a] = (t[a] ?? 0) + 1;
  return t;
}
