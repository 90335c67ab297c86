/**
 * The amphora provider's background roles, which runtime.ts starts: the health manager
 * (heartbeats, operating status and statistics, failover of silent amphorae) and housekeeping
 * (orphans, agent certificates, expiry warnings, managed certificates). Each loads only when its role runs.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { AmphoraDeps } from './deps.js';
import type { HealthManagerDeps } from './health/index.js';
import type { EnqueueListenerUpdate } from './acme/manager.js';

/** Starts the health manager; returns where it receives heartbeats, as `host:port` (`[v6]:port`). */
export async function startAmphoraHealth(deps: HealthManagerDeps): Promise<{ listen: string; close(): Promise<void> }> {
  const { HealthManager } = await import('./health/index.js');
  const manager = new HealthManager(deps);
  let bound;
  try {
    bound = await manager.start();
  } catch (e) {
    await manager.close();
    throw e;
  }
  return { listen: bound.address.includes(':') ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`, close: () => manager.close() };
}

export async function startAmphoraHousekeeping(
  db: Db, config: Config, log: Logger, amphora: AmphoraDeps, jobs: { notify(): void }, enqueue: EnqueueListenerUpdate,
): Promise<{ close(): Promise<void> }> {
  const { openHousekeeper } = await import('./housekeeping/index.js');
  const keeper = openHousekeeper(db, config, log, amphora, jobs, enqueue);
  keeper.start();
  return { close: () => keeper.close() };
}
