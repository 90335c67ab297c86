/**
 * The provider seam. A provider validates what it can build (refusing the rest with
 * Octavia's 501 wording) and supplies the flow that realises each operation. Every provider
 * folder holds the same files: driver.ts (this interface implemented), capabilities.ts (what it
 * accepts), flows.ts (how it builds it).
 */
import type { Flow, StepContext } from './flow.js';
import type { Operation } from './operations.js';

export interface Capability {
  readonly name: string;
  readonly description: string;
}

/** API-shaped attributes of an object after defaults were applied (create) or merged (update). */
export type Attrs = Readonly<Record<string, unknown>>;

/** Each hook throws an ApiError (usually 501 PROVIDER_UNSUPPORTED_OPTION) to refuse. */
export interface ProviderChecks {
  loadBalancer?(lb: Attrs): void;
  listener?(listener: Attrs): void;
  pool?(pool: Attrs): void;
  member?(member: Attrs, loadBalancer: Attrs): void;
  /** The members of one batch update, before each is checked on its own. */
  memberBatch?(members: readonly Attrs[]): void;
  healthMonitor?(hm: Attrs, pool: Attrs): void;
  l7policy?(policy: Attrs, listener: Attrs): void;
  l7rule?(rule: Attrs): void;
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
  flow(operation: Operation): Flow;
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
