/** The embedded key manager's secrets, containers and their access lists and consumers. */
import { codec, type Row } from './codec.js';

/** A secret; the payload only as AES-256-GCM ciphertext (null until it is stored). */
export interface KeyManagerSecretRecord {
  id: string;
  project_id: string;
  creator_id: string | null;
  name: string | null;
  secret_type: string;
  algorithm: string | null;
  bit_length: number | null;
  mode: string | null;
  expiration: string | null;
  content_type: string | null;
  /** Which encryption key sealed it, so keys can rotate. */
  key_id: string | null;
  nonce: string | null;
  ciphertext: string | null;
  auth_tag: string | null;
  created_at: string;
  updated_at: string;
}

export interface KeyManagerContainerRecord {
  id: string;
  project_id: string;
  creator_id: string | null;
  name: string | null;
  type: string;
  created_at: string;
  updated_at: string;
}

export interface KeyManagerContainerSecretRecord {
  container_id: string;
  secret_id: string;
  name: string | null;
  position: number;
}

/** The `read` ACL of a secret or container; no row = Barbican's implicit project access. */
export interface KeyManagerAclRecord {
  entity_kind: string;
  entity_id: string;
  operation: string;
  project_access: boolean;
  /** User ids. */
  users: string[];
  created_at: string;
  updated_at: string;
}

export type KeyManagerAclRow = Row<KeyManagerAclRecord>;

export const keyManagerAclCodec = codec<KeyManagerAclRecord>({ project_access: 'bool', users: 'json' });

export interface KeyManagerConsumerRecord {
  entity_kind: string;
  entity_id: string;
  project_id: string | null;
  service: string;
  resource_type: string;
  resource_id: string;
  created_at: string;
}
