/**
 * `--boot-test`: one throw-away amphora booted with the service's own compute and network drivers, as the
 * create flow boots one (a management address, a certificate of the server CA, the boot, the agent's
 * readiness over mutual TLS) and then heard from by the health manager; each step timed. Whatever
 * happens, everything it made is removed (processes, namespace, directory, address, row) and that is
 * checked. The amphora belongs to no load balancer, so the health manager records its heartbeats and
 * never fails it over.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { agentUrlOf, newAmphoraRow } from '../../db/records/amphora.js';
import { netnsExists } from '../../linux-net/ip.js';
import { heartbeatKey } from '../../providers/amphora/heartbeat-key.js';
import { amphoraMachinery } from '../../runtime.js';
import type { ManagementPlane } from './plane.js';
import { row, type CheckRow } from './verdict.js';

/** The health manager is another process: nothing tells this one that it wrote a heartbeat, so its row is read again at this pace. */
const HEARTBEAT_READ_MS = 100;

export async function bootTest(db: Db, config: Config, plane: ManagementPlane, heartbeatSecret: string | null): Promise<CheckRow[]> {
  const id = randomUUID();
  const target = `throw-away amphora ${id}`;
  const rows: CheckRow[] = [];
  if (config.compute.driver === 'noop') return [row('boot test', 'compute.driver noop', 'ok', 'compute.driver noop boots nothing: there is no amphora to test.')];
  if (!heartbeatSecret) return [row('boot test', target, 'FAIL', 'no heartbeat secret (amphora.heartbeatSecret, or DATA_DIR/heartbeat-secret) to give the amphora: pass the --data-dir and --config the service runs with.')];
  const deps = await amphoraMachinery(config)();
  const settings = deps.settings;
  let computeId: string | null = null;
  /** Runs a step, timing it; false once one failed (the rest are not run). */
  const step = async (name: string, work: () => Promise<string>, remedy: string): Promise<boolean> => {
    const started = performance.now();
    try {
      const said = await work();
      rows.push(row(`boot: ${name}`, target, 'ok', said, performance.now() - started));
      return true;
    } catch (e) {
      rows.push(row(`boot: ${name}`, target, 'FAIL', `${(e as Error).message.replace(/\.$/, '')}; ${remedy}`, performance.now() - started));
      return false;
    }
  };
  let address = '';
  const deadline = () => AbortSignal.timeout(settings.bootTimeoutMs);
  try {
    const booted =
      (await step(
        'address',
        async () => {
          await db.kysely.transaction().execute(async (trx) => {
            address = await deps.network.allocateManagementAddress(trx, id);
            await trx.insertInto('amphora').values(throwAwayRow(id, address, settings.agentPort)).execute();
          });
          return `management address ${address} handed out by the ${config.network.driver} network driver.`;
        },
        'the boot test could not go on (see the address pool rows).',
      )) &&
      (await step(
        'boot',
        async () => {
          const cert = await deps.ca.issueAmphoraCert(id, address, settings.certValidityDays);
          computeId = await deps.compute.boot(
            {
              amphoraId: id,
              dir: deps.amphoraDir(id),
              managementAddress: address,
              agentPort: settings.agentPort,
              certPem: cert.certPem,
              keyPem: cert.keyPem,
              clientCaPem: deps.ca.clientCaPem,
              heartbeat: { key: heartbeatKey(heartbeatSecret, id), targets: [settings.healthListen], intervalMs: settings.heartbeatIntervalMs },
              haproxyBinary: settings.haproxyBinary,
              maxconn: settings.maxconn,
            },
            deadline(),
          );
          await deps.compute.started(computeId, deadline());
          return `certificate issued by the server CA and ${computeId} booted by the ${config.compute.driver} compute driver; its agent listens.`;
        },
        `see agent.log in ${deps.amphoraDir(id)} (kept only while it runs) and the compute driver's requirements in the README.`,
      )) &&
      (await step(
        'agent ready',
        async () => {
          const client = await deps.agent({ id, agentUrl: agentUrlOf(address, settings.agentPort) });
          try {
            const info = await client.waitReady(deadline(), Date.now() + settings.bootTimeoutMs);
            return `the agent answered GET /1.0/info over mutual TLS (HAProxy ${info.haproxyVersion}).`;
          } finally {
            client.close();
          }
        },
        'the controller cannot reach a freshly booted agent: see the route, agent port and firewall rows of the amphorae above.',
      ));
    if (booted)
      await step(
        'first heartbeat',
        async () => {
          const waitMs = settings.heartbeatTimeoutMs + settings.heartbeatIntervalMs;
          const until = Date.now() + waitMs;
          for (;;) {
            const amp = await db.kysely.selectFrom('amphora').select('last_heartbeat_at').where('id', '=', id).executeTakeFirst();
            if (amp?.last_heartbeat_at) return `the health manager at ${settings.healthListen} accepted its heartbeat.`;
            if (Date.now() > until) throw new Error(`no heartbeat of it was accepted at ${settings.healthListen} within ${waitMs} ms`);
            await sleep(HEARTBEAT_READ_MS);
          }
        },
        'heartbeats do not reach the health manager, or it refuses them (see the heartbeat, health manager and firewall rows).',
      );
  } finally {
    await step(
      'remove',
      async () => {
        const instances = (await deps.compute.list()).filter((c) => c.amphoraId === id).map((c) => c.computeId);
        for (const instance of new Set([...instances, ...(computeId ? [computeId] : [])])) await deps.compute.delete(instance);
        await deps.network.releaseManagementAddress(db.kysely, id);
        await db.kysely.deleteFrom('amphora').where('id', '=', id).execute();
        const left = await leftovers(db, deps, plane, id);
        if (left.length) throw new Error(`left behind: ${left.join(', ')}`);
        return 'its processes, directory, namespace, management address and row are gone.';
      },
      `remove what is named by hand ('ostia housekeeping' removes compute and addresses no amphora claims).`,
    );
  }
  return rows;
}

async function leftovers(db: Db, deps: Awaited<ReturnType<ReturnType<typeof amphoraMachinery>>>, plane: ManagementPlane, id: string): Promise<string[]> {
  const left: string[] = [];
  if ((await deps.compute.list()).some((c) => c.amphoraId === id)) left.push(`its directory ${deps.amphoraDir(id)}`);
  if (await db.kysely.selectFrom('port').select('id').where('device_id', '=', id).executeTakeFirst()) left.push('its management port');
  if (await db.kysely.selectFrom('amphora').select('id').where('id', '=', id).executeTakeFirst()) left.push('its amphora row');
  const ns = plane.amphoraNamespace(id);
  if (ns && netnsExists(ns)) left.push(`its namespace ${ns}`);
  return left;
}

function throwAwayRow(id: string, address: string, agentPort: number) {
  return newAmphoraRow(id, address, agentPort, { status: 'BOOTING', status_reason: 'ostia doctor --boot-test' });
}
