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
  /**
   * Stores a certificate with its key as a certificate container of `owner`'s project, as
   * `openstack secret store` and `secret container create` would, and returns its reference
   * (managed certificates: Ostia orders them, the project owns them).
   */
  storeCertificate(owner: CertificateOwner, name: string, parts: Required<Pick<CertificateParts, 'certificate' | 'private_key'>> & Pick<CertificateParts, 'intermediates'>): Promise<string>;
  /** Removes what storeCertificate stored: the container and its secrets. Idempotent. */
  deleteCertificate(ref: string): Promise<void>;
}

export interface CertificateOwner {
  projectId: string;
  /** The user the secrets are created for, or null for the project's members alike. */
  userId: string | null;
}
