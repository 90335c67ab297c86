/** The OVN provider: load balancers as rows of OVN's Northbound database; OVN builds the flows. */
import type { Config } from '../../config.js';
import { apiError } from '../../domain/errors.js';
import { cidrContains } from '../../domain/net.js';
import type { NetworkCatalog } from '../../network/catalog.js';
import type { JobHook, ProviderChecks, ProviderDriver } from '../../provider-contract/provider.js';
import { ovnCapabilities, ovnChecks, PROVIDER } from './capabilities.js';
import type { OvnDepsLoader } from './deps.js';
import { ovnFlows } from './flows.js';
import type { MoveDeps } from '../provider-moves.js';

/**
 * The capability checks plus what only this deployment's config can say: the VIP's network must
 * be an OVN switch, and a member without a subnet must be on the VIP's subnet (upstream's rule).
 */
function deploymentChecks(catalog: NetworkCatalog, ovn: Config['ovn']): ProviderChecks {
  const mapped = new Set(ovn.networks.map((n) => n.networkId));
  return {
    ...ovnChecks,
    loadBalancer(lb) {
      const networkId = lb.vip_network_id ?? catalog.subnet(lb.vip_subnet_id ?? '')?.network_id;
      if (networkId && !mapped.has(networkId))
        throw apiError(
          'VALIDATION',
          `Network ${networkId} is not connected to OVN: the ovn provider needs a VIP network mapped to a logical switch (ovn.networks in Ostia's config)${mapped.size ? `; mapped networks: ${[...mapped].join(', ')}` : ''}.`,
        );
    },
    member(member, lb) {
      ovnChecks.member!(member, lb);
      if (member.subnet_id) return;
      const vipSubnet = catalog.subnet(lb.vip_subnet_id ?? '');
      if (vipSubnet && !cidrContains(vipSubnet.cidrParsed, member.address))
        throw apiError(
          'PROVIDER_UNSUPPORTED_OPTION',
          PROVIDER,
          'Subnet is required, or Loadbalancer associated with Pool must have a subnet, for Member creation with OVN Provider Driver if it is not the same as LB VIP subnet',
        );
    },
  };
}

export function ovnDriver(load: OvnDepsLoader, catalog: NetworkCatalog, config: Config, jobHook?: JobHook, moves: MoveDeps = {}): ProviderDriver {
  const { requireSupported } = ovnCapabilities;
  return {
    name: PROVIDER,
    description: 'Octavia OVN driver.',
    // Upstream defines no flavor or availability zone metadata: asking for it is a 501 action.
    flavorCapabilities() {
      requireSupported('flavor', 'capabilities');
      return [];
    },
    availabilityZoneCapabilities() {
      requireSupported('availability_zone', 'capabilities');
      return [];
    },
    validateFlavorData: () => requireSupported('flavor', 'validate'),
    validateAvailabilityZoneData: () => requireSupported('availability_zone', 'validate'),
    checks: deploymentChecks(catalog, config.ovn),
    flow: ovnFlows(load, moves),
    jobHook,
  };
}
