/**
 * The amphora provider's network under `network.driver: noop`. The config allows it only where
 * nothing boots (compute.driver noop), so no HAProxy ever binds a VIP and plugging one, at any
 * address, has nothing to do; management addresses stay rows, as the loopback driver keeps them.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { NetworkDriver } from '../driver.js';

export class NoopNetworkDriver implements NetworkDriver {
  constructor(private readonly management: Pick<NetworkDriver, 'allocateManagementAddress' | 'releaseManagementAddress'>) {}

  allocateManagementAddress(trx: Transaction<Database>, amphoraId: string): Promise<string> {
    return this.management.allocateManagementAddress(trx, amphoraId);
  }

  releaseManagementAddress(db: Kysely<Database>, amphoraId: string): Promise<void> {
    return this.management.releaseManagementAddress(db, amphoraId);
  }

  async plugVip(_amphoraId: string, _vip: string): Promise<void> {}

  async unplugVip(_amphoraId: string, _vip: string): Promise<void> {}
}
