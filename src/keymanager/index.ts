/**
 * The key manager as the rest of Ostia sees it: resolve a reference with the service's own
 * identity, decide whether a caller may use a reference, and record who uses what. Embedded
 * (this database, with the Barbican v1 API mounted at /key-manager) or external (a real
 * Barbican, reached with service credentials), per `keyManager.mode`.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { keyManagerApi, type Authenticate } from './api.js';
import { PayloadCipher } from './crypto.js';
import { EmbeddedKeyManager } from './embedded.js';
import { ExternalKeyManager } from './external.js';
import type { KeyManager } from './key-manager.js';
import { KeyManagerStore } from './store.js';

export { KEY_MANAGER_PREFIX, parseRef, type Identity } from './access.js';
export { ForeignReferenceError, MissingReferenceError } from './errors.js';
export { KeyUnavailableError } from './crypto.js';
export type { Caller, CertificateOwner, CertificateParts, ConsumerRegistration, KeyManager, Material } from './key-manager.js';

export interface KeyManagerSetup {
  readonly keyManager: KeyManager;
  /** The Barbican API plugin to mount at KEY_MANAGER_PREFIX; null when the key manager is external. */
  readonly api: ((authenticate: Authenticate) => FastifyPluginAsync) | null;
}

export function createKeyManager(config: Config, deps: { db: Db; publicUrl(): string; fetch?: typeof fetch }): KeyManagerSetup {
  const km = config.keyManager;
  if (km.mode === 'external') return { keyManager: new ExternalKeyManager(externalSettings(config), deps.fetch), api: null };
  const embedded = { store: new KeyManagerStore(deps.db), cipher: new PayloadCipher(km.encryptionKey, km.previousEncryptionKeys), publicUrl: deps.publicUrl };
  return { keyManager: new EmbeddedKeyManager(embedded), api: (authenticate) => keyManagerApi(embedded, authenticate) };
}

/** keyManager.external, with identity.external's service user where it leaves the credentials empty. */
function externalSettings(config: Config) {
  const own = config.keyManager.external;
  const identity = config.identity.external;
  const fromIdentity = !own.authUrl || !own.username;
  return {
    url: own.url,
    authUrl: fromIdentity ? identity.authUrl : own.authUrl,
    username: fromIdentity ? identity.username : own.username,
    password: fromIdentity ? identity.password : own.password,
    projectName: fromIdentity ? identity.projectName : own.projectName,
    userDomainName: fromIdentity ? identity.userDomainName : own.userDomainName,
    projectDomainName: fromIdentity ? identity.projectDomainName : own.projectDomainName,
  };
}
