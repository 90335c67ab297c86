/**
 * The verify-certificates step: after a push, the controller connects to the VIP as a client
 * would and checks that every TERMINATED_HTTPS listener this job created or changed serves the
 * certificates it should (./tls-expectations.ts), for each server name. Only then does the
 * job go on to mark the listener ACTIVE.
 *
 * When a changed listener does not serve the certificates it now references (whatever names
 * they have), its previous references (kept in the job's payload, and still registered as
 * consumers) are put back, pushed and verified in turn;
 * the listener ends in ERROR with the reason in its status_reason, the load balancer ACTIVE,
 * and clients keep the certificate they had. A new listener has nothing to go back to: its
 * job fails.
 */
import { loadBalancerCodec } from '../../db/records/load-balancer.js';
import { listenerCodec } from '../../db/records/listener.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Step, StepContext } from '../../provider-contract/flow.js';
import { listenerRefColumns, type ListenerRefColumns } from '../../certificate-use/consumers.js';
import type { ListenerRow } from '../../db/records/listener.js';
import { readCertificate } from '../../keymanager/tls-material.js';
import { timestamp } from '../../domain/time.js';
import { servedCertificateRefs } from './config-builder.js';
import type { AmphoraDeps, AmphoraDepsLoader } from './deps.js';
import { inService, pushToAmphorae } from './steps.js';
import { probesFor, type Probe, type Served } from './tls-expectations.js';
import { servedFingerprint } from './tls-probe.js';

/**
 * How long a probe may see something else before it counts as wrong: after a reload the old
 * HAProxy worker may accept a few more connections with the old certificate.
 */
export const SETTLE_WINDOW_MS = 5_000;
const RETRY_PAUSE_MS = 50;

type Listener = Pick<ListenerRow, 'id' | 'protocol_port'> & ListenerRefColumns;

interface ProbeWindow {
  readonly signal: AbortSignal;
  readonly settleMs: number;
}

async function servedBy(deps: AmphoraDeps, columns: ListenerRefColumns): Promise<Served[]> {
  // What runs is probed as it is, expired or not: expiry is reported elsewhere.
  return Promise.all(servedCertificateRefs(listenerCodec.decode(columns)).map(async (ref) => ({ ref, bundle: await readCertificate(deps.keyManager, ref, { acceptExpired: true }) })));
}

/** Null when the probe is answered as expected within the settle window, else why not. */
async function runProbe(vip: string, listener: Listener, probe: Probe, window: ProbeWindow): Promise<string | null> {
  const { signal, settleMs } = window;
  const deadline = Date.now() + settleMs;
  const target = `listener ${listener.id} at ${vip.includes(':') ? `[${vip}]` : vip}:${listener.protocol_port}${probe.serverName ? ` for ${probe.serverName}` : ' without a server name'}`;
  for (;;) {
    let seen: string;
    try {
      const fingerprint = await servedFingerprint(vip, listener.protocol_port, probe.serverName, AbortSignal.any([signal, AbortSignal.timeout(Math.max(settleMs, 1000))]));
      if (probe.accept.includes(fingerprint)) return null;
      seen = `served the certificate with SHA-256 fingerprint ${fingerprint}`;
    } catch (e) {
      signal.throwIfAborted();
      seen = `did not answer a TLS handshake (${(e as Error).message})`;
    }
    if (!probe.accept.length || Date.now() >= deadline) return `${target} ${seen}, expected ${probe.expected}`;
    await sleep(RETRY_PAUSE_MS, undefined, { signal });
  }
}

/**
 * Null when `listener` serves what its columns name, else the first reason it does not.
 * `previous` are the references it had before, if they changed: names only they covered must
 * now get the default certificate.
 */
async function verify(vip: string, deps: AmphoraDeps, listener: Listener, previous: ListenerRefColumns | null, window: ProbeWindow): Promise<string | null> {
  const [served, before] = await Promise.all([servedBy(deps, listener), previous ? servedBy(deps, previous) : null]);
  const failures = await Promise.all(probesFor(served, before).map((probe) => runProbe(vip, listener, probe, window)));
  return failures.find((f) => f !== null) ?? null;
}

async function rollBack(ctx: StepContext, deps: AmphoraDeps, vip: string, listener: Listener, previous: ListenerRefColumns, reason: string, window: ProbeWindow): Promise<void> {
  const why = `certificate change rolled back: ${reason}`;
  ctx.log.warn({ listener: listener.id, reason }, 'the new certificate is not served as it should be; putting the previous one back');
  await ctx.db.kysely.updateTable('listener').set({ ...previous, status_reason: why }).where('id', '=', listener.id).execute();
  await pushToAmphorae(ctx, deps, await inService(ctx));
  const again = await verify(vip, deps, { ...listener, ...previous }, listener, window);
  if (again) throw new Error(`${why}; the previous certificates are not served either: ${again}`);
  await ctx.db.kysely.updateTable('listener').set({ provisioning_status: 'ERROR', updated_at: timestamp() }).where('id', '=', listener.id).execute();
}

export function verifyCertificates(load: AmphoraDepsLoader, settleMs = SETTLE_WINDOW_MS): Step {
  return {
    name: 'verify-certificates',
    async run(ctx) {
      const deps = await load();
      // Without a data plane no VIP answers: there is nothing to probe (the certificates were read when pushed).
      if (!deps.dataPlane) return;
      const db = ctx.db.kysely;
      const lb = await db.selectFrom('load_balancer').select(['vip_address', 'admin_state_up']).where('id', '=', ctx.loadBalancerId).executeTakeFirst();
      if (!lb?.vip_address || !loadBalancerCodec.decode(lb).admin_state_up) return;
      const listeners = await db
        .selectFrom('listener')
        .select(['id', 'protocol_port', 'default_tls_container_ref', 'sni_container_refs', 'client_ca_tls_container_ref', 'client_crl_container_ref'])
        .where('load_balancer_id', '=', ctx.loadBalancerId)
        .where('protocol', '=', 'TERMINATED_HTTPS')
        .where('admin_state_up', '=', 1)
        .where('provisioning_status', 'in', ['PENDING_CREATE', 'PENDING_UPDATE'])
        .execute();
      if (!listeners.length) return;
      const change = ctx.payload.tls_change ?? null;
      const window: ProbeWindow = { signal: ctx.signal, settleMs };
      for (const listener of listeners) {
        const previous = change?.kind === 'listener' && change.id === listener.id ? change.previous : null;
        // Resumed after the rows were put back: verify what they name now.
        const replaced = previous && JSON.stringify(listenerRefColumns(listener)) !== JSON.stringify(listenerRefColumns(previous)) ? previous : null;
        const failure = await verify(lb.vip_address, deps, listener, replaced, window);
        if (!failure) continue;
        if (!replaced) throw new Error(failure);
        await rollBack(ctx, deps, lb.vip_address, listener, replaced, failure, window);
      }
    },
  };
}
