/** The operations a job asks of a provider: one per change the API or the health manager makes. */
import type { TlsChange } from '../certificate-use/consumers.js';
import type { Migration } from '../domain/placement.js';

export const Operations = [
  'loadbalancer.create', 'loadbalancer.update', 'loadbalancer.delete', 'loadbalancer.failover', 'loadbalancer.migrate',
  'listener.create', 'listener.update', 'listener.delete',
  'pool.create', 'pool.update', 'pool.delete',
  'member.create', 'member.update', 'member.delete', 'member.batch',
  'healthmonitor.create', 'healthmonitor.update', 'healthmonitor.delete',
  'l7policy.create', 'l7policy.update', 'l7policy.delete',
  'l7rule.create', 'l7rule.update', 'l7rule.delete',
  'amphora.failover', 'amphora.config', 'amphora.delete',
] as const;
export type Operation = (typeof Operations)[number];

/** The operations that act on one amphora, which their payload names. */
export type AmphoraOperation = Extract<Operation, `amphora.${string}`>;

/** Every field a job's payload may hold; JobPayload says which operation carries which. */
interface PayloadFields {
  /** The amphora an amphora operation acts on. */
  amphora_id: string;
  /** Whether a load balancer's delete took its tree with it (`?cascade=true`). */
  cascade: boolean;
  /** An update that changed a listener's or pool's certificate references: them before and as requested. */
  tls_change: TlsChange;
  /** Why the health manager fails the amphora over (what it also wrote to the amphora's status_reason). */
  reason: string;
  /** A migration's placement before and as asked (`PUT …/migrate`). */
  migration: Migration;
  /** The health manager enqueued the job, not a request: `enqueue` records it, for the failover history. */
  automatic: true;
}

/** What a job of operation `O` carries besides its load balancer, as the API or the health manager enqueued it. */
export type JobPayload<O extends Operation> = O extends 'amphora.failover'
  ? Pick<PayloadFields, 'amphora_id'> & Partial<Pick<PayloadFields, 'reason'>>
  : O extends AmphoraOperation
    ? Pick<PayloadFields, 'amphora_id'>
    : O extends 'loadbalancer.delete'
      ? Pick<PayloadFields, 'cascade'>
      : O extends 'loadbalancer.migrate'
        ? Pick<PayloadFields, 'migration'>
      : O extends 'listener.update' | 'pool.update'
        ? Partial<Pick<PayloadFields, 'tls_change'>>
        : Record<string, never>;

/** A job's payload as a step reads it: a step serves several operations, so each field is there only for those that carry it. */
export type StepPayload = Readonly<Partial<PayloadFields>>;
