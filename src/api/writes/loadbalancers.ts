/** Load balancer writes: the insert graph create builds on (VIP, provider, flavor and zone resolved), update, delete and failover. */
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import { timestamp } from '../../domain/time.js';
import { ipVersion } from '../../domain/net.js';
import type { LoadBalancerCreateBody, LoadBalancerUpdateBody } from '../../domain/schemas/loadbalancer.js';
import type { Static } from '../../domain/schema-kit.js';
import { authorize } from '../../identity/policy.js';
import { enqueue } from '../../controller/jobs.js';
import { loadBalancerCodec, type LoadBalancerRecord, type LoadBalancerRow } from '../../db/records/load-balancer.js';
import { writeTags } from '../tags.js';
import { lockLoadBalancer } from '../../db/lb-lock.js';
import { checkQuota } from '../quota.js';
import type { SubnetDef } from '../../network/catalog.js';
import type { ProviderDriver } from '../../provider-contract/provider.js';

type Trx = Transaction<Database>;
type CreateInput = Static<typeof LoadBalancerCreateBody>['loadbalancer'];
type UpdateInput = Static<typeof LoadBalancerUpdateBody>['loadbalancer'];

interface ResolvedVip {
  subnet: SubnetDef;
  address: string | null;
  /** The port the VIP takes; `stored` false when it holds no address yet and is written on allocation. */
  port: { id: string; stored: boolean } | null;
  qosPolicyId: string | null;
}

/** Octavia's VIP rules: one of port/network/subnet, each must exist and be usable by the project. */
async function resolveVip(deps: ApiDeps, db: Trx, b: CreateInput, projectId: string): Promise<ResolvedVip> {
  const { network } = deps;
  const visible = async (networkId: string) => {
    const projects = network.projectsOf(networkId);
    return !!projects && (projects.length === 0 || projects.includes(projectId));
  };
  if (b.vip_port_id) {
    const port = await network.port(db, b.vip_port_id);
    if (!port) throw apiError('INVALID_SUBRESOURCE', 'Port', b.vip_port_id);
    if (port.device_id) throw apiError('VALIDATION', `Port ${b.vip_port_id} is already in use by ${port.device_id}.`);
    const stored = port.ip_address !== null;
    // Octavia's no-op ports hold no address either: it then needs the subnet or the address from the request.
    if (!stored && !b.vip_subnet_id && !b.vip_address)
      throw apiError('VALIDATION', "VIP port's subnet could not be determined. Please specify either a VIP subnet or address.");
    // A port that holds no address yet (network.driver noop) goes where the request puts it, else on its own subnet.
    const subnet = !stored && (b.vip_subnet_id || b.vip_network_id) ? await requestedSubnet(deps, db, b, visible) : (await network.subnet(db, port.subnet_id))!;
    if (!(await visible(subnet.network_id))) throw apiError('INVALID_SUBRESOURCE', 'Port', b.vip_port_id);
    const address = port.ip_address ?? b.vip_address ?? null;
    return { subnet, address, port: { id: port.id, stored }, qosPolicyId: b.vip_qos_policy_id ?? port.qos_policy_id };
  }
  if (!b.vip_subnet_id && !b.vip_network_id) throw apiError('VALIDATION', 'VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.');
  return { subnet: await requestedSubnet(deps, db, b, visible), address: b.vip_address ?? null, port: null, qosPolicyId: b.vip_qos_policy_id ?? null };
}

/** The VIP subnet `vip_subnet_id` names, or the one of `vip_network_id` that fits the requested address. */
async function requestedSubnet(deps: ApiDeps, db: Trx, b: CreateInput, visible: (networkId: string) => Promise<boolean>): Promise<SubnetDef> {
  const { network } = deps;
  if (b.vip_subnet_id) {
    const subnet = await network.subnet(db, b.vip_subnet_id, b.vip_network_id);
    if (!subnet || !(await visible(subnet.network_id))) throw apiError('INVALID_SUBRESOURCE', 'Subnet', b.vip_subnet_id);
    if (b.vip_network_id && b.vip_network_id !== subnet.network_id)
      throw apiError('VALIDATION', `Subnet ${b.vip_subnet_id} is not in network ${b.vip_network_id}.`);
    return subnet;
  }
  const networkId = b.vip_network_id!;
  if (!(await visible(networkId))) throw apiError('INVALID_SUBRESOURCE', 'Network', networkId);
  const subnet = await network.pickSubnet(db, networkId, b.vip_address ? (ipVersion(b.vip_address) as 4 | 6) : undefined);
  if (!subnet) throw apiError('VALIDATION', `Network ${networkId} has no subnet for the requested VIP.`);
  return subnet;
}

/** Flavor, AZ and provider, checked in Octavia's order with its messages. */
async function resolveProvider(deps: ApiDeps, db: Trx, b: CreateInput): Promise<{ driver: ProviderDriver; provider: string }> {
  let provider = b.provider ?? null;
  if (b.flavor_id) {
    const flavor = await db.selectFrom('flavor').innerJoin('flavor_profile', 'flavor_profile.id', 'flavor.flavor_profile_id').select(['flavor.enabled', 'flavor_profile.provider_name']).where('flavor.id', '=', b.flavor_id).executeTakeFirst();
    if (!flavor) throw apiError('VALIDATION', 'Invalid flavor_id.');
    if (!flavor.enabled) throw apiError('DISABLED_OPTION', 'flavor', b.flavor_id);
    if (provider && provider !== flavor.provider_name) throw apiError('FLAVOR_PROVIDER_MISMATCH', b.flavor_id, provider);
    provider = flavor.provider_name;
  }
  if (b.availability_zone) {
    const az = await db.selectFrom('availability_zone').innerJoin('availability_zone_profile', 'availability_zone_profile.id', 'availability_zone.availability_zone_profile_id').select(['availability_zone.enabled', 'availability_zone_profile.provider_name']).where('availability_zone.name', '=', b.availability_zone).executeTakeFirst();
    if (!az) throw apiError('VALIDATION', 'Invalid availability zone.');
    if (!az.enabled) throw apiError('DISABLED_OPTION', 'availability_zone', b.availability_zone);
    if (provider && provider !== az.provider_name) throw apiError('VALIDATION', `Availability zone '${b.availability_zone}' is not compatible with provider '${provider}'.`);
    provider ??= az.provider_name;
  }
  provider ??= deps.providers.defaultProvider;
  return { driver: deps.providers.get(provider), provider };
}

/** The project the load balancer is created in, once the caller may create there. */
export function authorizedCreator(ctx: RequestContext, b: CreateInput): string {
  const projectId = b.project_id ?? b.tenant_id ?? ctx.projectId;
  if (!projectId)
    throw apiError('VALIDATION', 'Missing project ID in request where one is required. An administrator should check the keystone settings in the Octavia configuration.');
  authorize(ctx, 'loadbalancer', 'post', projectId);
  return projectId;
}

/**
 * Writes a new load balancer (PENDING_CREATE) with its VIP port, in the caller's
 * transaction. Graph create adds its children in the same transaction afterwards.
 */
export async function insertLoadBalancer(deps: ApiDeps, trx: Trx, ctx: RequestContext, b: CreateInput): Promise<LoadBalancerRow> {
  const projectId = authorizedCreator(ctx, b);
  const { network } = deps;
  const vip = await resolveVip(deps, trx, b, projectId);
  if (vip.qosPolicyId && !network.qosPolicy(vip.qosPolicyId)) throw apiError('INVALID_SUBRESOURCE', 'qos_policy', vip.qosPolicyId);
  for (const sg of b.vip_sg_ids ?? []) if (!network.securityGroup(sg)) throw apiError('INVALID_SUBRESOURCE', 'Security Group', sg);
  const additional = b.additional_vips ?? [];
  const seenSubnets = new Set([vip.subnet.id]);
  const additionalSubnets: SubnetDef[] = [];
  for (const av of additional) {
    const s = await network.subnet(trx, av.subnet_id, vip.subnet.network_id);
    if (!s) throw apiError('INVALID_SUBRESOURCE', 'Subnet', av.subnet_id);
    if (s.network_id !== vip.subnet.network_id) throw apiError('VALIDATION', 'All VIP subnets must belong to the same network.');
    if (seenSubnets.has(s.id)) throw apiError('VALIDATION', 'Duplicate VIP subnet(s) specified. Only one IP can be bound per subnet.');
    seenSubnets.add(s.id);
    additionalSubnets.push(s);
  }
  const { driver, provider } = await resolveProvider(deps, trx, b);
  const id = randomUUID();
  const attrs = { ...b, id, project_id: projectId, provider };
  driver.checks.loadBalancer?.(attrs);
  await checkQuota(trx, deps.config, projectId, { load_balancer: 1 }, deps.db.dialect);

  let portId: string;
  let address = vip.address;
  if (vip.port?.stored) {
    portId = vip.port.id;
    await trx.updateTable('port').set({ device_id: id, device_owner: 'Octavia' }).where('id', '=', portId).execute();
  } else {
    const allocated = await network.allocatePort(trx, { subnet: vip.subnet, address, projectId, deviceId: id, owner: 'Octavia', name: `octavia-lb-${id}`, qosPolicyId: vip.qosPolicyId, portId: vip.port?.id });
    portId = allocated.id;
    address = allocated.ip_address;
  }
  const additionalVips = [];
  for (const [i, av] of additional.entries()) {
    const p = await network.allocatePort(trx, { subnet: additionalSubnets[i]!, address: av.ip_address ?? null, projectId, deviceId: id, owner: 'Octavia', name: `octavia-lb-${id}` });
    additionalVips.push({ subnet_id: av.subnet_id, ip_address: p.ip_address, port_id: p.id });
  }
  const record: LoadBalancerRecord = {
    id,
    project_id: projectId,
    name: b.name ?? '',
    description: b.description ?? '',
    provisioning_status: 'PENDING_CREATE',
    operating_status: 'OFFLINE',
    // Octavia's quirk: an explicit null admin_state_up means false.
    admin_state_up: b.admin_state_up === undefined || Boolean(b.admin_state_up),
    vip_address: address,
    vip_port_id: portId,
    vip_subnet_id: vip.subnet.id,
    vip_network_id: vip.subnet.network_id,
    vip_qos_policy_id: vip.qosPolicyId,
    vip_sg_ids: b.vip_sg_ids ?? [],
    vip_vnic_type: 'normal',
    additional_vips: additionalVips,
    provider,
    flavor_id: b.flavor_id ?? null,
    availability_zone: b.availability_zone ?? null,
    topology: null,
    status_reason: null,
    config_version: 0,
    created_at: timestamp(),
    updated_at: null,
  };
  const row = loadBalancerCodec.encode(record);
  await trx.insertInto('load_balancer').values(row).execute();
  await writeTags(trx, id, b.tags);
  return row;
}

/** Checks a PUT body (network references, the provider's verdict) before the transaction. */
export function checkLoadBalancerUpdate(deps: ApiDeps, row: LoadBalancerRow, b: UpdateInput): void {
  if (b.vip_qos_policy_id && !deps.network.qosPolicy(b.vip_qos_policy_id)) throw apiError('INVALID_SUBRESOURCE', 'qos_policy', b.vip_qos_policy_id);
  for (const sg of b.vip_sg_ids ?? []) if (!deps.network.securityGroup(sg)) throw apiError('INVALID_SUBRESOURCE', 'Security Group', sg);
  deps.providers.forLoadBalancer(row.provider).checks.loadBalancer?.(loadBalancerCodec.decode(row));
}

export async function updateLoadBalancer(trx: Trx, row: LoadBalancerRow, b: UpdateInput): Promise<void> {
  await lockLoadBalancer(trx, row.id, ['ACTIVE'], 'PENDING_UPDATE');
  const set: Partial<LoadBalancerRecord> = {};
  if (b.name !== undefined) set.name = b.name ?? '';
  if (b.description !== undefined) set.description = b.description ?? '';
  if (b.admin_state_up !== undefined) set.admin_state_up = Boolean(b.admin_state_up);
  if (b.vip_qos_policy_id !== undefined) set.vip_qos_policy_id = b.vip_qos_policy_id;
  if (b.vip_sg_ids !== undefined) set.vip_sg_ids = b.vip_sg_ids ?? [];
  if (Object.keys(set).length) await trx.updateTable('load_balancer').set(loadBalancerCodec.encode(set)).where('id', '=', row.id).execute();
  await writeTags(trx, row.id, b.tags);
  await enqueue(trx, { loadBalancerId: row.id, provider: row.provider, operation: 'loadbalancer.update' });
}

/** Without `cascade`, a load balancer that still has listeners or pools is refused. */
export async function deleteLoadBalancer(trx: Trx, row: LoadBalancerRow, cascade: boolean): Promise<void> {
  if (!cascade) {
    const child =
      (await trx.selectFrom('listener').select('id').where('load_balancer_id', '=', row.id).executeTakeFirst()) ??
      (await trx.selectFrom('pool').select('id').where('load_balancer_id', '=', row.id).executeTakeFirst());
    if (child) throw apiError('VALIDATION', `Cannot delete Load Balancer ${row.id} - it has children`);
  }
  await lockLoadBalancer(trx, row.id, ['ACTIVE', 'ERROR'], 'PENDING_DELETE');
  await enqueue(trx, { loadBalancerId: row.id, provider: row.provider, operation: 'loadbalancer.delete', payload: { cascade } });
}

export async function failoverLoadBalancer(trx: Trx, row: LoadBalancerRow): Promise<void> {
  await lockLoadBalancer(trx, row.id, ['ACTIVE', 'ERROR'], 'PENDING_UPDATE');
  await enqueue(trx, { loadBalancerId: row.id, provider: row.provider, operation: 'loadbalancer.failover' });
}
