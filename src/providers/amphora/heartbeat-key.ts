/**
 * An amphora's heartbeat key, derived from the service's heartbeat secret and the amphora's id:
 * the worker that boots the amphora and the health manager that verifies it compute the same
 * key, and no key is ever written to the database. One amphora's key (readable on its host)
 * tells nothing about another's.
 */
import { createHmac } from 'node:crypto';

export function heartbeatKey(secret: string, amphoraId: string): string {
  if (!secret) throw new Error('amphora.heartbeatSecret is empty: heartbeat keys cannot be derived');
  return createHmac('sha256', secret).update(`heartbeat:${amphoraId}`).digest('hex');
}
