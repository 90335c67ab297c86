/**
 * Compute driver `noop`, Octavia's compute_noop_driver: boot returns a compute id and starts
 * nothing. Nothing is written to disk, not even the agent certificate it is handed, and no
 * process is started, so there is nothing to stop, list or reap.
 */
import { createHash } from 'node:crypto';
import type { AmphoraSpec, ComputeDriver, ComputeStatus } from '../compute-driver.js';

export class NoopCompute implements ComputeDriver {
  /** Derived from the amphora, so a retried boot returns the same id (the interface's idempotence). */
  async boot(spec: AmphoraSpec): Promise<string> {
    return `noop-${createHash('sha256').update(spec.amphoraId).digest('hex').slice(0, 32)}`;
  }

  /** No agent will ever announce itself: the no-op agent client answers for it. */
  async started(): Promise<void> {}

  /** Octavia's no-op compute reports every instance up: a no-op amphora never dies. */
  async status(): Promise<ComputeStatus> {
    return 'running';
  }

  async delete(): Promise<void> {}

  /** It holds nothing, so housekeeping finds no orphan instance to reap. */
  async list(): Promise<Array<{ computeId: string; amphoraId: string }>> {
    return [];
  }
}
