/**
 * The key manager's contract: what the rest of Ostia asks of it, and the material it answers
 * with, whichever implements it (embedded, external).
 */
import type { Identity } from './access.js';

export interface CertificateParts {
  certificate: Buffer;
  private_key?: Buffer;
  intermediates?: Buffer;
  private_key_passphrase?: Buffer;
}

export type Material = { kind: 'secret'; payload: Buffer; contentType: string } | { kind: 'container'; parts: CertificateParts };

/** e.g. `{ service: 'octavia', resourceType: 'listener', resourceId: <listener id> }`. */
export interface ConsumerRegistration {
  service: string;
  resourceType: string;
  resourceId: string;
}

/** A caller; an external Barbican decides with the caller's own token, so it needs it. */
export interface Caller extends Identity {
  readonly token?: string;
}

export interface KeyManager {
  /** The material, read as the service (no ACL applies). Throws ForeignReferenceError / MissingReferenceError. */
  resolveForService(ref: string): Promise<Material>;
  /** Whether the caller may read it (owner project, or a read ACL); false for what does not exist. */
  canRead(caller: Caller, ref: string): Promise<boolean>;
  registerConsumer(ref: string, consumer: ConsumerRegistration): Promise<void>;
  /** Idempotent. */
  unregisterConsumer(ref: string, consumer: ConsumerRegistration): Promise<void>;
}
