/**
 * The provider seam. A provider validates what it can build (refusing the rest with
 * Octavia's 501 wording) and supplies the flow that realises each operation. Every provider
 * folder holds the same files: driver.ts (this interface implemented), capabilities.ts (what it
 * accepts), flows.ts (how it builds it).
 */
import type { Flow, StepContext } from './flow.js';
import type { Operation, StepPayload } from './operations.js';
import type { Topology } from '../domain/enums.js';
import type { HealthMonitorAttrs } from '../domain/rules/healthmonitor.js';
import type { L7PolicyRecord } from '../db/records/l7policy.js';
import type { L7RuleRecord } from '../db/records/l7rule.js';
import type { ListenerRecord } from '../db/records/listener.js';
import type { LoadBalancerRecord } from '../db/records/load-balancer.js';
import type { MemberRecord } from '../db/records/member.js';
import type { PoolRecord } from '../db/records/pool.js';

export interface Capability {
  readonly name: string;
  readonly description: string;
}

/** A new load balancer before its VIP is allocated: what its request names of the VIP network. */
export type LoadBalancerRequest = Pick<LoadBalancerRecord, 'id' | 'project_id' | 'provider'> & Partial<Pick<LoadBalancerRecord, 'vip_subnet_id' | 'vip_network_id'>>;

/** An L7 policy's settings: the record less what the tree stores alike, its listener and its position. */
export type L7PolicySettings = Pick<L7PolicyRecord, 'name' | 'description' | 'admin_state_up' | 'action' | 'redirect_pool_id' | 'redirect_url' | 'redirect_prefix' | 'redirect_http_code'>;

export type L7RuleSettings = Pick<L7RuleRecord, 'type' | 'compare_type' | 'key' | 'value' | 'invert' | 'admin_state_up'>;

/**
 * Each hook sees the object as it will be stored, after defaults (create) or merge (update),
 * and throws an ApiError (usually 501 PROVIDER_UNSUPPORTED_OPTION) to refuse.
 */
export interface ProviderChecks {
  loadBalancer?(lb: LoadBalancerRequest | LoadBalancerRecord): void;
  listener?(listener: ListenerRecord): void;
  pool?(pool: PoolRecord): void;
  member?(member: MemberRecord, loadBalancer: LoadBalancerRecord): void;
  /** The members of one batch update as requested, before each is checked on its own. */
  memberBatch?(members: ReadonlyArray<{ monitor_address?: string | null; monitor_port?: number | null }>): void;
  healthMonitor?(hm: HealthMonitorAttrs, pool: PoolRecord): void;
  l7policy?(policy: L7PolicySettings, listener: ListenerRecord): void;
  l7rule?(rule: L7RuleSettings): void;
  /** A topology a migration asks for; a provider without this hook builds no amphorae and has none. */
  topology?(topology: Topology): void;
  /** Operations this provider cannot do at all (e.g. amphora failover on a provider without amphorae). */
  operation?(op: Operation): void;
}

export interface ProviderDriver {
  readonly name: string;
  readonly description: string;
  /** The flavor metadata it takes; throws an ApiError (501) when it defines none, as Octavia's drivers may. */
  flavorCapabilities(): readonly Capability[];
  availabilityZoneCapabilities(): readonly Capability[];
  /** Throws an ApiError when a flavor profile's data is not valid for this provider. */
  validateFlavorData(data: Record<string, unknown>): void;
  validateAvailabilityZoneData(data: Record<string, unknown>): void;
  readonly checks: ProviderChecks;
  /** The flow of a job: its operation's, or (a migration to another provider) the move's, which its payload names. */
  flow(operation: Operation, payload?: StepPayload): Flow;
  /** What the provider does around each of its jobs besides the flow, if anything. */
  readonly jobHook?: JobHook;
}

/**
 * Work beside a provider's flows, around each of its jobs: `begin` runs before the job's first
 * step, in every attempt, and resolves to what runs once the job has ended, done or failed. A job
 * interrupted has not ended (it resumes at its step), so nothing runs then. Neither part changes
 * the job's outcome: it is recorded before the end runs.
 */
export interface JobHook {
  begin(ctx: StepContext): Promise<() => Promise<void>>;
}

/** How the controller and the health manager find the driver of a stored load balancer (providers/registry.ts implements it). */
export interface ProviderLookup {
  forLoadBalancer(provider: string): ProviderDriver;
}
