/**
 * What a failed amphora job means to the load balancer's owner. The owner reads a status
 * reason: what happened and what brings it back, never the control plane's addresses, paths or
 * amphora ids (the trace and the log keep the detail for the operator).
 *
 * Two questions are asked of a failure:
 *  - did the amphorae keep serving what they served before? Then a change failed, not the load
 *    balancer: the agent answers a configuration it cannot load with 400 (`haproxy -c` refused
 *    it) or 500 (HAProxy could not start with it, the previous file put back: see
 *    amphora-agent/apply.ts); a configuration that could not be built (a certificate the key
 *    manager no longer gives) was never sent; a listener that does not serve its new
 *    certificates is the listener's failure. Anything else (an agent that does not answer) may
 *    have left the data plane anywhere.
 *  - would a failover that failed fail the same way on the next amphora (configuration), or
 *    may it work later (infrastructure)? See db/failover-memory.
 */
import { AgentHttpError } from '../../amphora-client/client.js';
import type { FailureKind } from '../../db/failover-memory.js';
import { CertificateError } from '../../tls/certificates.js';
import { UnretrievableReference } from '../../keymanager/tls-material.js';

/** Only a configuration the agent refused: a build that fails for want of a machine or an answer may work next time. */
export function failureKind(step: string, error: Error): FailureKind {
  return step === 'push-config' && error instanceof AgentHttpError && error.status === 400 ? 'configuration' : 'infrastructure';
}

export function failoverOwnerReason(kind: FailureKind): string {
  return kind === 'configuration'
    ? 'failover stopped: a new amphora refused the configuration of this load balancer; it is not retried until an operator fails it over; the load balancer can be deleted'
    : 'failover failed: a new amphora could not be built; it is retried automatically, less and less often';
}

/**
 * Why a change was not applied while the amphorae kept their previous configuration, in words
 * for the owner; null when the failure may have left the data plane in another state.
 */
export function refusedChangeCause(step: string, error: Error): string | null {
  if (step === 'verify-certificates') return `the listener does not serve its certificates as it should (${error.message})`;
  if (step !== 'push-config') return null;
  if (error instanceof CertificateError || error instanceof UnretrievableReference) return error.message;
  if (!(error instanceof AgentHttpError)) return null;
  if (error.status === 400) return 'HAProxy refused the resulting configuration';
  if (error.status === 500) return 'HAProxy could not start with the resulting configuration (a port in use on the host, for example)';
  return null;
}

/**
 * The owner's account of a change that was not applied: the cause, and (when nothing new reached
 * HAProxy) that the previous configuration still serves; null as for refusedChangeCause. A
 * listener that fails verify-certificates was applied, so nothing is said of the previous one.
 */
export function refusedChangeReason(step: string, error: Error): string | null {
  const cause = refusedChangeCause(step, error);
  if (cause === null) return null;
  return step === 'push-config' ? `${cause}. The load balancer still serves its previous configuration` : cause;
}

/** What each step's failure means to the owner, where the change did not simply fail (above). */
const stepMeaning: Record<string, string> = {
  'create-amphora': 'no amphora could be recorded for it',
  'boot-compute': 'its amphora could not be started',
  'wait-for-agent': 'its amphora did not come up in time',
  'plug-vip': 'its VIP could not be attached to the amphora',
  'push-config': 'its amphora could not be reached to take the configuration',
  'stop-amphorae': 'its amphorae could not be stopped',
};

/** The owner's reason for a load balancer a job failed: the step, and what it means without the control plane's detail. */
export function ownerFailureReason(step: string, error: Error): string {
  const cause = refusedChangeCause(step, error) ?? stepMeaning[step] ?? 'an internal error';
  return `${step} failed: ${cause}; an operator's trace of the load balancer has the detail`;
}
