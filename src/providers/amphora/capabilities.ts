/**
 * What Ostia's amphora builds, and the 501s for the rest. An amphora here is HAProxy plus our
 * agent in processes on this machine: no LVS, so no SCTP, and UDP only where the agent can
 * balance it with nftables in a network namespace of the amphora's own (compute.driver netns;
 * `balancesUdp` below is the one place that says so), one amphora per load balancer
 * (no VRRP yet), and TLS versions as one range (HAProxy sets a minimum and a maximum). The
 * protocols and algorithms are a table (providers/capability-table.ts); what depends on more
 * than one value (TLS version ranges, L7 policies on a listener, flavor topology) is checked below it.
 */
import type { Config } from '../../config.js';
import type { Capability, ProviderChecks } from '../../provider-contract/provider.js';
import { apiError } from '../../domain/errors.js';
import { LbAlgorithm, ListenerProtocol, PoolProtocol, type Topology } from '../../domain/enums.js';
import { effectiveTopology, flavorTopology } from '../../domain/placement.js';
import { tlsVersionRange } from '../../domain/grammar/tls.js';
import { capabilitiesOf, validateProfileData, type DataSchema } from '../profile-data.js';
import { capabilityTable, option, type CapabilityTable } from '../capability-table.js';

export const PROVIDER = 'amphora';

const refuse = (detail: string) => apiError('PROVIDER_UNSUPPORTED_OPTION', PROVIDER, detail);

const L7ListenerProtocols: readonly string[] = ['HTTP', 'TERMINATED_HTTPS'];

export type ComputeDriverName = Config['compute']['driver'];

/** Whether the amphorae of `compute` balance UDP: the agent needs CAP_NET_ADMIN in a network namespace of its own for its nftables table. */
export const balancesUdp = (compute: ComputeDriverName): boolean => compute === 'netns';

/** What nftables balances UDP pools by (amphora-agent/udp/), and the monitors the agent runs on them. */
const UdpAlgorithms: readonly string[] = ['ROUND_ROBIN', 'SOURCE_IP'];
const UdpMonitorTypes: readonly string[] = ['UDP-CONNECT', 'TCP', 'HTTP', 'PING'];

const noSctpText = (what: string) => `Amphora provider does not support ${what}: Ostia amphorae balance SCTP nowhere (no LVS).`;
const udpNeedsNetnsText = (what: string) =>
  `Amphora provider does not support ${what} under compute.driver local: amphorae balance UDP with nftables in a network namespace of their own. Use compute.driver netns.`;

/** The provider's table for amphorae of `compute`. */
export function amphoraCapabilities(compute: ComputeDriverName): CapabilityTable {
  const udp = balancesUdp(compute);
  const served = (protocols: readonly string[]) => protocols.filter((p) => p !== 'SCTP' && (udp || p !== 'UDP'));
  const unserved = (what: string, v: string) => option(v === 'SCTP' ? noSctpText(`${v} ${what}`) : udpNeedsNetnsText(`${v} ${what}`));
  return capabilityTable(PROVIDER, [
    {
      feature: 'listener.protocol',
      supported: served(ListenerProtocol).filter((p) => p !== 'PROMETHEUS'),
      values: ListenerProtocol,
      refusal: (v) => (v === 'PROMETHEUS' ? option('Amphora provider does not support PROMETHEUS listeners yet.') : unserved('listeners', v)),
    },
    { feature: 'pool.protocol', supported: served(PoolProtocol), values: PoolProtocol, refusal: (v) => unserved('pools', v) },
    // The algorithms HAProxy balances with, as Octavia's amphora driver lists them; UDP pools take fewer (below).
    { feature: 'pool.lb_algorithm', supported: ['ROUND_ROBIN', 'SOURCE_IP', 'LEAST_CONNECTIONS'], values: LbAlgorithm, refusal: (v) => option(`Amphora provider does not support ${v} algorithm.`) },
  ]);
}

/** Octavia's amphora flavor keys; descriptions say what Ostia does with each. */
const FlavorSchema: DataSchema = {
  loadbalancer_topology: {
    type: 'string',
    enum: ['SINGLE', 'ACTIVE_STANDBY'],
    description: 'The load balancer topology. One of: SINGLE - One amphora per load balancer. ACTIVE_STANDBY - Two amphora per load balancer. Ostia builds ACTIVE_STANDBY under compute.driver netns (keepalived VRRPv3 between namespaces) and noop (rows only).',
  },
  compute_flavor: {
    type: 'string',
    description: 'The compute driver flavor ID. Recorded on the amphora and otherwise ignored: the local compute driver runs amphorae as processes, which have no flavors.',
  },
  amp_image_tag: {
    type: 'string',
    description: 'The amphora image tag. Ignored: the local compute driver runs the installed Ostia agent and HAProxy, not an image.',
  },
  sriov_vip: {
    type: 'boolean',
    description: 'When true, the VIP port will be created using an SR-IOV VF port. Only false is accepted: loopback networking has no SR-IOV.',
  },
  allow_member_sriov: {
    type: 'boolean',
    description: 'When true, users can request SR-IOV VF ports for members. Only false is accepted: loopback networking has no SR-IOV.',
  },
};

/** Availability-zone keys Octavia's amphora driver knows but Ostia's cannot honour, and why. */
const UnsupportedZoneKeys = {
  management_network: 'the loopback network driver has the one management range of the configuration (amphora.managementNetwork)',
  valid_vip_networks: 'every configured VIP network may be used',
} as const;

/** Octavia's amphora availability-zone keys. */
const AvailabilityZoneSchema: DataSchema = {
  compute_zone: {
    type: 'string',
    description: 'The compute availability zone. Recorded on the amphora as its cached_zone: the local compute driver has a single zone.',
  },
  volume_zone: { type: 'string', description: 'The volume availability zone. Ignored: local amphorae boot from no volume.' },
  management_network: {
    type: 'string',
    description: `The management network ID for the amphora. Not supported: ${UnsupportedZoneKeys.management_network}.`,
  },
  valid_vip_networks: {
    type: 'array',
    description: `List of network IDs that are allowed for VIP use. Not supported yet: ${UnsupportedZoneKeys.valid_vip_networks}.`,
  },
};

export const amphoraFlavorCapabilities: readonly Capability[] = capabilitiesOf(FlavorSchema);
export const amphoraAvailabilityZoneCapabilities: readonly Capability[] = capabilitiesOf(AvailabilityZoneSchema);

export const ACTIVE_STANDBY_REFUSAL =
  'loadbalancer_topology ACTIVE_STANDBY needs amphorae with network stacks of their own, between which keepalived moves the VIP: set compute.driver netns and network.driver bridge (as root). Under compute.driver local both HAProxies of a pair would answer on one machine.';

/**
 * `activeStandby`: compute.driver netns builds the MASTER/BACKUP pair with keepalived between them; noop
 * builds the pair's rows, as Octavia's flows do with no-op drivers; local amphorae share one network stack.
 */
export function validateAmphoraFlavorData(data: Record<string, unknown>, opts: { activeStandby: boolean } = { activeStandby: false }): void {
  validateProfileData(PROVIDER, FlavorSchema, data);
  if (data.loadbalancer_topology === 'ACTIVE_STANDBY') checkTopology('ACTIVE_STANDBY', opts);
  for (const key of ['sriov_vip', 'allow_member_sriov'])
    if (data[key] === true) throw refuse(`${key} True is not supported: loopback networking has no SR-IOV.`);
}

/** Whether amphorae of `compute` can be ACTIVE_STANDBY pairs (see validateAmphoraFlavorData). */
export const buildsPairs = (compute: ComputeDriverName) => ({ activeStandby: compute !== 'local' });

/** A topology asked of amphorae (by a flavor profile or a migration) that this compute driver cannot build is refused. */
export function checkTopology(topology: Topology, opts: { activeStandby: boolean }): void {
  if (topology === 'ACTIVE_STANDBY' && !opts.activeStandby) throw refuse(ACTIVE_STANDBY_REFUSAL);
}

/**
 * What a stored amphora flavor profile asks for: its compute flavor, and its topology unless the load
 * balancer chose its own (SINGLE when neither says).
 */
export function amphoraProfile(flavorData: string | null, ownTopology: Topology | null = null): { topology: Topology; computeFlavor: string | null } {
  const data = JSON.parse(flavorData ?? '{}') as { compute_flavor?: string };
  return { topology: effectiveTopology(ownTopology, flavorTopology(flavorData)), computeFlavor: data.compute_flavor ?? null };
}

export function validateAmphoraAvailabilityZoneData(data: Record<string, unknown>): void {
  validateProfileData(PROVIDER, AvailabilityZoneSchema, data);
  for (const [key, reason] of Object.entries(UnsupportedZoneKeys)) if (key in data) throw refuse(`${key} is not supported: ${reason}.`);
}

/** TLS versions with a gap (TLSv1 and TLSv1.2 without TLSv1.1) cannot be configured: HAProxy enables a range. */
function checkVersionRange(versions: readonly string[] | null): void {
  if (!versions || tlsVersionRange(versions)) return;
  throw refuse(`Amphora provider does not support tls_versions ${JSON.stringify(versions)}: HAProxy enables one range of versions, from a minimum to a maximum. Give consecutive versions, such as ["TLSv1.2", "TLSv1.3"].`);
}

/** The provider's synchronous checks for amphorae of `compute`. */
export function amphoraChecks(compute: ComputeDriverName): ProviderChecks {
  const { requireSupported } = amphoraCapabilities(compute);
  return {
    listener(listener) {
      requireSupported('listener.protocol', listener.protocol);
      checkVersionRange(listener.tls_versions);
    },
    pool(pool) {
      requireSupported('pool.protocol', pool.protocol);
      requireSupported('pool.lb_algorithm', pool.lb_algorithm);
      if (pool.protocol === 'UDP' && !UdpAlgorithms.includes(pool.lb_algorithm))
        throw refuse(`Amphora provider does not support ${pool.lb_algorithm} algorithm for UDP pools: nftables balances them by turn (ROUND_ROBIN) or by source address (SOURCE_IP).`);
      checkVersionRange(pool.tls_versions);
    },
    // The API takes UDP-CONNECT and SCTP monitors for UDP and SCTP pools only, which the table refused first where they cannot run.
    healthMonitor(hm, pool) {
      if (pool.protocol === 'UDP' && !UdpMonitorTypes.includes(hm.type))
        throw refuse(`Amphora provider does not support ${hm.type} health monitors on UDP pools: the agent checks UDP members with ${UdpMonitorTypes.join(', ')}.`);
    },
    l7policy(_policy, listener) {
      if (!L7ListenerProtocols.includes(listener.protocol)) throw refuse(`${listener.protocol} protocol listeners do not support L7 policies`);
    },
    topology: (topology) => checkTopology(topology, buildsPairs(compute)),
  };
}
