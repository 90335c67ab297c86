/**
 * Network drivers give amphorae their addresses: a management address the controller
 * reaches the agent on, and the VIPs HAProxy binds. Management addresses are `port` rows
 * written in the caller's transaction, so a failed flow step leaves none behind and two
 * amphorae can never be handed the same one.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.js';

export interface NetworkDriver {
  /** The amphora's management address; asking again for the same amphora returns the same address. */
  allocateManagementAddress(trx: Transaction<Database>, amphoraId: string): Promise<string>;
  /** Frees it; releasing an amphora that holds none succeeds. */
  releaseManagementAddress(db: Kysely<Database>, amphoraId: string): Promise<void>;
  /** Makes `vip` reachable on the amphora, so its HAProxy can bind it. */
  plugVip(amphoraId: string, vip: string): Promise<void>;
  unplugVip(amphoraId: string, vip: string): Promise<void>;
}
