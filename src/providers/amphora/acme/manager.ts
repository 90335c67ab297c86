/**
 * Managed certificates, kept by the housekeeper: each round finds the listeners whose
 * certificate is due (domain/rules/acme.ts asks for it, ./due.ts decides when), claims each in
 * the database (several housekeepers never order twice), orders it (./orderer.ts) with the
 * challenges answered by the load balancer's amphorae, stores it in the key manager under the
 * listener's project, and points the listener at it exactly as an API update of
 * `default_tls_container_ref` would: the listener's update job swaps it at run time, checks the
 * VIP serves it and rolls back if not. A failure is written to the listener's `status_reason`
 * and retried later, the wait doubling with each failure in a row.
 */
import type { Logger } from 'pino';
import type { Config } from '../../../config.js';
import type { Db } from '../../../db/database.js';
import { acmeCertificateCodec, type AcmeCertificateRecord } from '../../../db/records/acme-certificate.js';
import { listenerCodec } from '../../../db/records/listener.js';
import { lockForChildChange } from '../../../db/lb-lock.js';
import { BEING_REMOVED } from '../../../db/lb-tree.js';
import type { Transaction } from 'kysely';
import type { Database } from '../../../db/schema.js';
import type { JobPayload } from '../../../provider-contract/operations.js';
import { consumerOf, listenerRefColumns, syncConsumers } from '../../../certificate-use/consumers.js';
import { isApiError } from '../../../domain/errors.js';
import { acmeChallengeType } from '../../../domain/rules/acme.js';
import type { AgentApi } from '../../../amphora-client/client.js';
import { timestamp } from '../../../domain/time.js';
import type { KeyManager } from '../../../keymanager/index.js';
import type { AmphoraDeps } from '../deps.js';
import { orderDue, retryDelayMs, type OrderReason } from './due.js';
import { AcmeOrderError, type ChallengeAnswerer, type IssuedCertificate } from './orderer.js';

/** controller/jobs.ts's `enqueue`, which runtime.ts hands the housekeeper (providers sit beside the controller, not above it). */
export type EnqueueListenerUpdate = (
  trx: Transaction<Database>,
  job: { loadBalancerId: string; provider: string; operation: 'listener.update'; payload: JobPayload<'listener.update'> },
) => Promise<unknown>;

export interface AcmeManagerDeps {
  db: Db;
  settings: Config['acme'];
  log: Logger;
  enqueue: EnqueueListenerUpdate;
  /** Wakes the workers once a listener's update job is enqueued. */
  jobs: { notify(): void };
  keyManager: KeyManager;
  agent: AmphoraDeps['agent'];
  orderer: { order(domains: readonly string[], answerer: ChallengeAnswerer): Promise<IssuedCertificate> };
  now?: () => number;
}

export interface AcmeOutcome {
  listenerId: string;
  reason: OrderReason;
  /** The new container's reference, or the failure as written to the listener. */
  issued?: string;
  failed?: string;
}

interface Candidate {
  id: string;
  project_id: string;
  load_balancer_id: string;
  provider: string;
  domains: string[];
  default_tls_container_ref: string | null;
  status_reason: string | null;
  progress: AcmeCertificateRecord | undefined;
}

export class AcmeManager {
  private readonly now: () => number;

  constructor(private readonly deps: AcmeManagerDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** One round: every listener whose certificate is due, one after the other. */
  async run(): Promise<AcmeOutcome[]> {
    const outcomes: AcmeOutcome[] = [];
    for (const listener of await this.candidates()) {
      const reason = orderDue({ acme_domains: listener.domains, default_tls_container_ref: listener.default_tls_container_ref }, listener.progress, this.now(), this.deps.settings.renewAtFraction);
      if (reason === null || !(await this.claim(listener))) continue;
      outcomes.push(await this.renew(listener, reason));
    }
    return outcomes;
  }

  /** Listeners with managed certificates on load balancers at rest, with what their orders got. */
  private async candidates(): Promise<Candidate[]> {
    const rows = await this.deps.db.kysely
      .selectFrom('listener')
      .innerJoin('load_balancer', 'load_balancer.id', 'listener.load_balancer_id')
      .select([
        'listener.id', 'listener.project_id', 'listener.load_balancer_id', 'listener.acme_domains', 'listener.default_tls_container_ref', 'listener.status_reason',
        'load_balancer.provider',
      ])
      .where('listener.acme_domains', 'is not', null)
      .where('listener.provisioning_status', '=', 'ACTIVE')
      .where('load_balancer.provisioning_status', '=', 'ACTIVE')
      .execute();
    if (!rows.length) return [];
    const progress = await this.deps.db.kysely.selectFrom('acme_certificate').selectAll().where('listener_id', 'in', rows.map((r) => r.id)).execute();
    const byListener = new Map(progress.map((p) => [p.listener_id, acmeCertificateCodec.decode(p)]));
    return rows.map((r) => ({ ...r, domains: listenerCodec.decode({ acme_domains: r.acme_domains }).acme_domains!, progress: byListener.get(r.id) }));
  }

  /** The order is this housekeeper's until it has ended or its time has passed. */
  private async claim(listener: Candidate): Promise<boolean> {
    const now = this.now();
    const { db } = this.deps;
    await db.kysely
      .insertInto('acme_certificate')
      .values(acmeCertificateCodec.encode({
        listener_id: listener.id, domains: listener.domains, container_ref: null, not_before: null, not_after: null,
        renew_requested: false, failures: 0, last_error: null, next_attempt_at: 0, claimed_until: 0, updated_at: timestamp(),
      }))
      .onConflict((oc) => oc.column('listener_id').doNothing())
      .execute();
    const claimed = await db.kysely
      .updateTable('acme_certificate')
      .set({ claimed_until: now + this.deps.settings.orderTimeoutSeconds * 1000 })
      .where('listener_id', '=', listener.id)
      .where('claimed_until', '<=', now)
      .executeTakeFirst();
    return Number(claimed.numUpdatedRows) === 1;
  }

  private async renew(listener: Candidate, reason: OrderReason): Promise<AcmeOutcome> {
    const { log } = this.deps;
    let stored: string | null = null;
    try {
      if (reason === 'rolled back')
        throw new AcmeOrderError(`the certificate issued last was not served and was rolled back${listener.status_reason ? ` (${listener.status_reason})` : ''}`);
      log.info({ listener: listener.id, domains: listener.domains, reason }, 'ordering a managed certificate');
      const issued = await this.withinTimeout(this.order(listener));
      stored = await this.deps.keyManager.storeCertificate(
        { projectId: listener.project_id, userId: null },
        `${listener.domains[0]} (ACME, not after ${issued.notAfter.slice(0, 10)})`,
        { certificate: Buffer.from(issued.certificate), private_key: Buffer.from(issued.privateKey), ...(issued.intermediates ? { intermediates: Buffer.from(issued.intermediates) } : {}) },
      );
      await this.serve(listener, stored, issued);
      log.info({ listener: listener.id, ref: stored, notAfter: issued.notAfter }, 'managed certificate issued; the listener is being updated to serve it');
      return { listenerId: listener.id, reason, issued: stored };
    } catch (e) {
      if (stored) await this.deps.keyManager.deleteCertificate(stored).catch(() => undefined);
      return { listenerId: listener.id, reason, failed: await this.recordFailure(listener, e, reason === 'rolled back') };
    }
  }

  /** Orders with the challenges answered by every amphora of the load balancer (both of an ACTIVE_STANDBY pair). */
  private async order(listener: Candidate): Promise<IssuedCertificate> {
    const amphorae = await this.deps.db.kysely
      .selectFrom('amphora')
      .select(['id', 'agent_url'])
      .where('load_balancer_id', '=', listener.load_balancer_id)
      .where('status', '=', 'ALLOCATED')
      .execute();
    const reachable = amphorae.filter((a): a is { id: string; agent_url: string } => a.agent_url !== null);
    if (!reachable.length) throw new AcmeOrderError(`load balancer ${listener.load_balancer_id} has no amphora to answer the challenges`);
    const siblings = await this.deps.db.kysely
      .selectFrom('listener')
      .select(['protocol', 'protocol_port', 'acme_domains'])
      .where('load_balancer_id', '=', listener.load_balancer_id)
      // As the amphorae's configuration sees them (servedTree): a listener being deleted is gone.
      .where('provisioning_status', '!=', BEING_REMOVED)
      .execute();
    const type = acmeChallengeType(siblings.map((r) => ({ ...r, ...listenerCodec.decode({ acme_domains: r.acme_domains }) }))) ?? 'http-01';
    const clients = await Promise.all(reachable.map((a) => this.deps.agent({ id: a.id, agentUrl: a.agent_url })));
    const onEvery = async (call: (c: AgentApi) => Promise<void>) => void (await Promise.all(clients.map(call)));
    try {
      return await this.deps.orderer.order(listener.domains, {
        type,
        put: (answer) =>
          onEvery((c) => (answer.type === 'http-01' ? c.putAcmeChallenge(answer.token, answer.keyAuthorization) : c.putAcmeAlpnCertificate(answer.name, answer.certificate))),
        remove: (answer) => onEvery((c) => (answer.type === 'http-01' ? c.deleteAcmeChallenge(answer.token) : c.deleteAcmeAlpnCertificate(answer.name))),
      });
    } finally {
      for (const c of clients) c.close();
    }
  }

  /**
   * The listener's update, as the API's: the load balancer locked, the reference set, the job
   * enqueued with the replaced reference (released once the new one serves, restored if not).
   * A load balancer busy with another change is waited for.
   */
  private async serve(listener: Candidate, ref: string, issued: IssuedCertificate): Promise<void> {
    const { db } = this.deps;
    const deadline = this.now() + this.deps.settings.orderTimeoutSeconds * 1000;
    for (;;) {
      try {
        await db.kysely.transaction().execute(async (trx) => {
          await lockForChildChange(trx, listener.load_balancer_id);
          const current = await trx.selectFrom('listener').selectAll().where('id', '=', listener.id).executeTakeFirst();
          if (!current || current.acme_domains !== JSON.stringify(listener.domains) || current.provisioning_status !== 'ACTIVE')
            throw new AcmeOrderError('the listener changed while its certificate was ordered; ordering again for what it asks now');
          const updated = { ...current, default_tls_container_ref: ref };
          await trx
            .updateTable('listener')
            .set({ default_tls_container_ref: ref, provisioning_status: 'PENDING_UPDATE', status_reason: null, updated_at: timestamp() })
            .where('id', '=', listener.id)
            .execute();
          await this.deps.enqueue(trx, {
            loadBalancerId: listener.load_balancer_id, provider: listener.provider, operation: 'listener.update',
            payload: { tls_change: { kind: 'listener', id: listener.id, previous: listenerRefColumns(current), requested: listenerRefColumns(updated) } },
          });
          await trx
            .updateTable('acme_certificate')
            .set(acmeCertificateCodec.encode({
              domains: listener.domains, container_ref: ref, not_before: issued.notBefore, not_after: issued.notAfter,
              renew_requested: false, failures: 0, last_error: null, next_attempt_at: 0, claimed_until: 0, updated_at: timestamp(),
            }))
            .where('listener_id', '=', listener.id)
            .execute();
        });
        break;
      } catch (e) {
        if (!(isApiError(e) && e.code === 'LB_IMMUTABLE') || this.now() >= deadline) throw e;
        await loadBalancerAtRest(db, listener.load_balancer_id, deadline - this.now());
      }
    }
    this.deps.jobs.notify();
    await syncConsumers(this.deps.keyManager, this.deps.log, consumerOf('listener', listener.id), [], [ref]);
  }

  /** The failure on the listener (status_reason) and in its progress row, with the next attempt's time. */
  private async recordFailure(listener: Candidate, e: unknown, notServing: boolean): Promise<string> {
    const failures = (listener.progress?.failures ?? 0) + 1;
    const next = this.now() + retryDelayMs(failures, this.deps.settings.retryMinSeconds, this.deps.settings.retryMaxSeconds);
    const why = e instanceof Error ? e.message : String(e);
    const message = `managed certificate for ${listener.domains.join(', ')} not issued: ${why}; attempt ${failures}, the next at ${new Date(next).toISOString()}`;
    this.deps.log.warn({ listener: listener.id, err: e }, message);
    const { db } = this.deps;
    await db.kysely
      .updateTable('acme_certificate')
      .set({
        failures, last_error: why, next_attempt_at: next, claimed_until: 0, updated_at: timestamp(),
        // What was issued and then rolled back no longer counts as serving: the next attempt orders afresh.
        ...(notServing ? { container_ref: null } : {}),
      })
      .where('listener_id', '=', listener.id)
      .execute();
    await db.kysely.updateTable('listener').set({ status_reason: message }).where('id', '=', listener.id).where('provisioning_status', '=', 'ACTIVE').execute();
    return message;
  }

  private withinTimeout<T>(work: Promise<T>): Promise<T> {
    const ms = this.deps.settings.orderTimeoutSeconds * 1000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AcmeOrderError(`the order took longer than ${this.deps.settings.orderTimeoutSeconds} s (acme.orderTimeoutSeconds)`)), ms);
    });
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }
}

/** Resolves once the load balancer has left its PENDING_* state (or is gone), or after `ms`: told by the database's status feed. */
async function loadBalancerAtRest(db: Db, lbId: string, ms: number): Promise<void> {
  await new Promise<void>((resolve) => {
    let stop: (() => void) | undefined;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stop?.();
      resolve();
    };
    const timer = setTimeout(finish, ms);
    const check = async () => {
      const lb = await db.kysely.selectFrom('load_balancer').select('provisioning_status').where('id', '=', lbId).executeTakeFirst();
      if (!lb || !lb.provisioning_status.startsWith('PENDING_')) finish();
    };
    void db.status
      .watch({ changed: (id) => id === lbId && void check(), resync: () => void check() })
      .then((unwatch) => {
        stop = unwatch;
        if (done) unwatch();
        else void check();
      });
  });
}
