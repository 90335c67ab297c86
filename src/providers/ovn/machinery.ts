/**
 * The ovn provider's machinery in one process: the Northbound connection (opened by the first
 * flow that needs it, or by a worker at start), the Southbound connection (opened on first use,
 * never waited for long), and, in a worker, reconciliation when the Northbound connection opens
 * and after every reconnection — one at a time, with at most one more queued behind it.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { NetworkCatalog } from '../../network/catalog.js';
import type { OvsdbClient } from '../../ovn/ovsdb/index.js';
import { openOnce } from '../open-once.js';
import { connectSouthbound } from '../../ovn/connection.js';
import { networkView, type OvnDeps } from './deps.js';

/** How long an OVN flow waits for a lost Northbound connection before it fails the change. */
const RECONNECT_WAIT_MS = 300_000;
/** A settling change asks the Southbound for verdicts; it does not wait long for the database to appear. */
const SOUTHBOUND_CONNECT_MS = 2_000;

export interface OvnMachinery {
  load(): Promise<OvnDeps>;
  /** Opens the Northbound connection now (a worker's start), logging instead of throwing. */
  warmUp(): void;
  close(): Promise<void>;
}

export function ovnMachinery(config: Config, catalog: NetworkCatalog, db: Db, log: Logger, opts: { reconcile: boolean }): OvnMachinery {
  const abort = new AbortController();
  const ovnLog = log.child({ provider: 'ovn' });
  let opened: OvnDeps | undefined;
  let southbound: OvsdbClient | undefined;
  let reconciling: Promise<void> | undefined;
  let again = false;

  const reconcile = (why: string): void => {
    if (reconciling) {
      again = true;
      return;
    }
    reconciling = (async () => {
      const { reconcileNorthbound } = await import('./reconcile.js');
      do {
        again = false;
        try {
          ovnLog.info({ ...(await reconcileNorthbound(db, opened!, ovnLog)), why }, 'northbound reconciled');
        } catch (e) {
          ovnLog.error({ err: (e as Error).message, why }, 'northbound reconciliation failed; the next reconnection or restart retries it');
        }
      } while (again && !abort.signal.aborted);
    })().finally(() => {
      reconciling = undefined;
    });
  };

  const openSouthbound = openOnce(() => connectSouthbound(config.ovn, ovnLog, { connectTimeoutMs: SOUTHBOUND_CONNECT_MS, signal: abort.signal }));
  const load = openOnce(async () => {
    const { Northbound } = await import('./northbound.js');
    const nb = await Northbound.open(config.ovn, ovnLog, { signal: abort.signal });
    opened = {
      nb,
      catalog,
      network: networkView(catalog, config.ovn),
      reconnectWaitMs: RECONNECT_WAIT_MS,
      async southbound() {
        if (southbound?.connected) return southbound;
        try {
          return (southbound = await openSouthbound());
        } catch (e) {
          ovnLog.warn({ err: (e as Error).message }, 'southbound database unreachable; member health will follow from the health role');
          return undefined;
        }
      },
    };
    if (opts.reconcile) {
      reconcile('start');
      nb.client.on('reconnected', () => reconcile('reconnected'));
    }
    return opened;
  });

  return {
    load,
    warmUp() {
      load().catch((e: unknown) => ovnLog.error({ err: (e as Error).message }, 'cannot reach the OVN Northbound database; the next OVN change retries'));
    },
    async close() {
      abort.abort();
      await reconciling?.catch(() => undefined);
      opened?.nb.close();
      southbound?.close();
    },
  };
}
