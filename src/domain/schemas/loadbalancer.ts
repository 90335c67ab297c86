/** Request bodies of the load balancer resource. */
import { Type, Nullable, Uuid, Str, IpAddress, Tags, Strict, Patch, Enum } from '../schema-kit.js';
import { Topology } from '../enums.js';
import { ListenerSingleCreate } from './listener.js';
import { PoolSingleCreate } from './pool.js';

export const AdditionalVip = Strict({ subnet_id: Uuid(), ip_address: Type.Optional(IpAddress()), port_id: Type.Optional(Uuid()) });

export const LoadBalancerCreate = Type.Object(
  {
    name: Type.Optional(Nullable(Str())),
    description: Type.Optional(Nullable(Str())),
    admin_state_up: Type.Optional(Nullable(Type.Boolean())),
    project_id: Type.Optional(Str(36)),
    tenant_id: Type.Optional(Str(36)),
    vip_address: Type.Optional(IpAddress()),
    vip_port_id: Type.Optional(Uuid()),
    vip_subnet_id: Type.Optional(Uuid()),
    vip_network_id: Type.Optional(Uuid()),
    vip_qos_policy_id: Type.Optional(Nullable(Uuid())),
    vip_sg_ids: Type.Optional(Type.Array(Uuid())),
    additional_vips: Type.Optional(Type.Array(AdditionalVip)),
    provider: Type.Optional(Str(64)),
    flavor_id: Type.Optional(Nullable(Uuid())),
    availability_zone: Type.Optional(Nullable(Str())),
    tags: Type.Optional(Tags()),
    /** Graph create (§4): children built in the same call. */
    listeners: Type.Optional(Type.Array(ListenerSingleCreate)),
    pools: Type.Optional(Type.Array(PoolSingleCreate)),
  },
  { additionalProperties: false },
);

export const LoadBalancerCreateBody = Strict({ loadbalancer: LoadBalancerCreate });

export const LoadBalancerUpdateBody = Strict({
  loadbalancer: Patch({
    name: Nullable(Str()),
    description: Nullable(Str()),
    admin_state_up: Nullable(Type.Boolean()),
    vip_qos_policy_id: Nullable(Uuid()),
    vip_sg_ids: Nullable(Type.Array(Uuid())),
    tags: Tags(),
  }),
});

/**
 * `PUT /v2/lbaas/loadbalancers/{id}/migrate` (an Ostia extension): where to move the load balancer.
 * What is left out stays as it is; a new provider without a flavor means none.
 */
export const LoadBalancerMigrateBody = Strict({
  migration: Patch({
    provider: Str(64),
    flavor_id: Nullable(Uuid()),
    topology: Enum(Topology),
  }),
});

/** Keys a flavor profile may set for load balancers built by Ostia's providers. */
export const TopologyEnum = Enum(Topology);
