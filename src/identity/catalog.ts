/**
 * The service catalog every scoped token carries. Clients find Octavia in it by type
 * `load-balancer`, interface and region, so all three must match what they ask for.
 */
import { createHash } from 'node:crypto';

/** Where the API mounts the embedded Keystone. */
export const IDENTITY_PREFIX = '/identity';

export type EndpointInterface = 'public' | 'internal' | 'admin';

export interface CatalogEndpoint {
  readonly id: string;
  readonly interface: EndpointInterface;
  /** Both spellings: the CLI reads either, some clients read only `region`. */
  readonly region: string;
  readonly region_id: string;
  readonly url: string;
}

export interface CatalogService {
  readonly id: string;
  readonly type: string;
  readonly name: string;
  readonly endpoints: readonly CatalogEndpoint[];
}

const INTERFACES: readonly EndpointInterface[] = ['public', 'internal', 'admin'];

export function identityUrl(publicUrl: string): string {
  return `${publicUrl}${IDENTITY_PREFIX}/v3`;
}

/**
 * `load-balancer` is unversioned: octaviaclient appends `/v2.0` itself and a `/v2` suffix
 * breaks it. `network` is the root too, because the API answers Neutron's
 * `/v2.0/subnets|networks|ports|qos/policies` look-ups there, where keystone-less clients
 * already send them.
 */
export function serviceCatalog(publicUrl: string, region: string): CatalogService[] {
  const services: Array<[type: string, name: string, url: string]> = [
    ['identity', 'keystone', identityUrl(publicUrl)],
    ['load-balancer', 'octavia', publicUrl],
    ['network', 'neutron', publicUrl],
    ['key-manager', 'barbican', `${publicUrl}/key-manager`],
  ];
  return services.map(([type, name, url]) => ({
    id: stableId(`service:${type}`),
    type,
    name,
    endpoints: INTERFACES.map((iface) => ({
      id: stableId(`endpoint:${type}:${iface}:${region}`),
      interface: iface,
      region,
      region_id: region,
      url,
    })),
  }));
}

function stableId(seed: string): string {
  return createHash('sha256').update(seed).digest('hex').slice(0, 32);
}
