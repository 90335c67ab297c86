/**
 * The ovn provider's background role, which runtime.ts starts: its part of the health role, the watcher of OVN's probes (Southbound
 * `Service_Monitor`), and the write-back of the member statuses it changes into the load
 * balancers' rows (`neutron:member_status`), as upstream's agent keeps them, for the tooling
 * that reads them there.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { connectSouthbound } from '../../ovn/connection.js';
import type { OvnDeps } from './deps.js';
import { OvnHealthWatcher } from './health-watcher.js';
import { syncSettled } from './state.js';

export async function startOvnHealth(db: Db, config: Config, loadDeps: () => Promise<OvnDeps>, log: Logger): Promise<{ close(): Promise<void> }> {
  const sb = await connectSouthbound(config.ovn, log);
  const watcher = new OvnHealthWatcher({ db, sb, log });
  // One write-back at a time; load balancers whose members change meanwhile are taken by the next round.
  const dirty = new Set<string>();
  let writing: Promise<void> | undefined;
  const writeBack = async () => {
    while (dirty.size) {
      const ids = [...dirty];
      dirty.clear();
      try {
        const { failed } = await syncSettled(db, await loadDeps(), ids);
        for (const { id, error } of failed) log.warn({ load_balancer_id: id, err: error }, 'could not record member statuses in the northbound rows');
      } catch (e) {
        log.warn({ err: (e as Error).message }, 'could not record member statuses in the northbound rows');
      }
    }
  };
  watcher.on('applied', (_changes: unknown, loadBalancers: string[]) => {
    for (const id of loadBalancers) dirty.add(id);
    writing ??= writeBack().finally(() => (writing = undefined));
  });
  try {
    await watcher.start();
  } catch (e) {
    sb.close();
    throw e;
  }
  return {
    async close() {
      await watcher.close();
      await writing;
      sb.close();
    },
  };
}
