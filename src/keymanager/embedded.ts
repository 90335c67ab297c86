/**
 * The KeyManager over this process's own database: what the listener and pool code and the
 * worker use when `keyManager.mode` is embedded. The service reads with its own identity (no
 * ACL applies to it); callers' access is decided by the same policy as the HTTP API.
 */
import { mayRead, parseRef, type Identity, type ParsedRef } from './access.js';
import { MissingReferenceError } from './errors.js';
import type { KeyManagerDeps } from './http.js';
import { randomUUID } from 'node:crypto';
import type { CertificateOwner, CertificateParts, ConsumerRegistration, KeyManager, Material } from './key-manager.js';
import { preciseTimestamp } from '../domain/time.js';
import type { ConsumerKey, SecretRow } from './store.js';
import { containerConsumerUrl, containerRef } from './views.js';
import { base } from './http.js';

const PARTS = ['certificate', 'private_key', 'intermediates', 'private_key_passphrase'] as const;

export class EmbeddedKeyManager implements KeyManager {
  constructor(private readonly deps: KeyManagerDeps) {}

  private parse(ref: string): ParsedRef {
    return parseRef(ref, this.deps.publicUrl());
  }

  async resolveForService(ref: string): Promise<Material> {
    const { kind, id } = this.parse(ref);
    if (kind === 'secret') {
      const secret = await this.secret(ref, id);
      return { kind, payload: this.open(secret), contentType: secret.content_type! };
    }
    if (!(await this.deps.store.container(id))) throw new MissingReferenceError(`${ref} does not exist`);
    const parts: Partial<Record<(typeof PARTS)[number], Buffer>> = {};
    for (const member of await this.deps.store.members([id])) {
      const name = PARTS.find((p) => p === member.name);
      if (name) parts[name] = this.open(await this.secret(ref, member.secret_id));
    }
    if (!parts.certificate) throw new MissingReferenceError(`${ref} holds no 'certificate' secret`);
    return { kind, parts: parts as CertificateParts };
  }

  /** A container is readable only with every secret in it: an ACL on the box is no key to its contents. */
  async canRead(caller: Identity, ref: string): Promise<boolean> {
    const { kind, id } = this.parse(ref);
    const { store } = this.deps;
    const row = kind === 'secret' ? await store.secret(id) : await store.container(id);
    if (!row || !mayRead(caller, await store.guard(kind, row))) return false;
    if (kind === 'secret') return true;
    for (const member of await store.members([id])) {
      const secret = await store.secret(member.secret_id);
      if (!secret || !mayRead(caller, await store.guard('secret', secret))) return false;
    }
    return true;
  }

  async registerConsumer(ref: string, consumer: ConsumerRegistration): Promise<void> {
    const { kind, id } = this.parse(ref);
    const exists = kind === 'secret' ? await this.deps.store.secret(id) : await this.deps.store.container(id);
    if (!exists) throw new MissingReferenceError(`${ref} does not exist`);
    await this.deps.store.addConsumer(kind, id, null, consumerKey(kind, consumer));
  }

  /** Idempotent: the entity may be gone already. */
  async unregisterConsumer(ref: string, consumer: ConsumerRegistration): Promise<void> {
    const { kind, id } = this.parse(ref);
    await this.deps.store.removeConsumer(kind, id, consumerKey(kind, consumer));
  }

  async storeCertificate(owner: CertificateOwner, name: string, parts: Parameters<KeyManager['storeCertificate']>[2]): Promise<string> {
    const now = preciseTimestamp();
    const members: Array<{ name: string; secretId: string }> = [];
    const stored = (Object.entries(parts) as Array<[string, Buffer | undefined]>).filter((e): e is [string, Buffer] => !!e[1]);
    try {
      for (const [part, bytes] of stored) {
        const id = randomUUID();
        const sealed = this.deps.cipher.seal(bytes, id);
        await this.deps.store.insertSecret({
          id, project_id: owner.projectId, creator_id: owner.userId, name: `${name} ${part}`,
          secret_type: part === 'private_key' ? 'private' : 'certificate', algorithm: null, bit_length: null, mode: null, expiration: null,
          content_type: 'text/plain', key_id: sealed.keyId, nonce: sealed.nonce, ciphertext: sealed.ciphertext, auth_tag: sealed.tag, created_at: now, updated_at: now,
        });
        members.push({ name: part, secretId: id });
      }
      const id = randomUUID();
      await this.deps.store.insertContainer({ id, project_id: owner.projectId, creator_id: owner.userId, name, type: 'certificate', created_at: now, updated_at: now }, members);
      return containerRef(base(this.deps), id);
    } catch (e) {
      for (const m of members) await this.deps.store.deleteSecret(m.secretId);
      throw e;
    }
  }

  async deleteCertificate(ref: string): Promise<void> {
    const { kind, id } = this.parse(ref);
    if (kind !== 'container') throw new MissingReferenceError(`${ref} is not a container`);
    const members = await this.deps.store.members([id]);
    await this.deps.store.deleteContainer(id);
    for (const m of members) await this.deps.store.deleteSecret(m.secret_id);
  }

  private async secret(ref: string, id: string): Promise<SecretRow & { ciphertext: string }> {
    const secret = await this.deps.store.secret(id);
    if (!secret) throw new MissingReferenceError(`${ref} refers to a secret that does not exist`);
    if (secret.ciphertext === null) throw new MissingReferenceError(`${ref} refers to a secret that has no payload`);
    return secret as SecretRow & { ciphertext: string };
  }

  private open(s: SecretRow & { ciphertext: string }): Buffer {
    return this.deps.cipher.open({ keyId: s.key_id!, nonce: s.nonce!, ciphertext: s.ciphertext, tag: s.auth_tag! }, s.id);
  }
}

/** Container consumers are Barbican's `{name, URL}`: stored as the service and the URL. */
function consumerKey(kind: 'secret' | 'container', c: ConsumerRegistration): ConsumerKey {
  if (kind === 'secret') return c;
  return { service: c.service, resourceType: '', resourceId: containerConsumerUrl(c) };
}
