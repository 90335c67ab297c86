/** A load balancer's failed failovers (see db/failover-memory.ts). */
export interface FailoverMemoryRecord {
  load_balancer_id: string;
  kind: 'configuration' | 'infrastructure';
  failures: number;
  /** Epoch milliseconds of the last failure. */
  failed_at: number;
}
