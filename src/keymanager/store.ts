/**
 * The key manager's rows: secrets (payload only as ciphertext), containers and their member
 * secrets, read ACLs and consumers. Plain Kysely builders, so the same code runs on SQLite and
 * PostgreSQL. Policy is not applied here: callers decide who may see what.
 */
import type { Selectable } from 'kysely';
import type { Db } from '../db/database.js';
import {
  keyManagerAclCodec,
  type KeyManagerAclRecord,
  type KeyManagerConsumerRecord,
  type KeyManagerContainerSecretRecord,
  type KeyManagerContainerRecord,
  type KeyManagerSecretRecord,
} from '../db/records/key-manager.js';
import { preciseTimestamp, timestamp } from '../domain/time.js';
import type { EntityKind, Guarded } from './access.js';
import type { Sealed } from './crypto.js';

export type SecretRow = Selectable<KeyManagerSecretRecord>;
export type ContainerRow = Selectable<KeyManagerContainerRecord>;
export type MemberRow = Selectable<KeyManagerContainerSecretRecord>;
export type AclRecord = KeyManagerAclRecord;
export type ConsumerRow = Selectable<KeyManagerConsumerRecord>;

export interface Page<T> {
  rows: T[];
  total: number;
}

/** `op` is one of gt, gte, lt, lte, eq; `value` a stored-format timestamp. */
export interface DateBound {
  op: 'gt' | 'gte' | 'lt' | 'lte' | 'eq';
  value: string;
}

export interface SecretQuery {
  /** The caller's project, or (acl_only) the secrets whose read ACL names this user. */
  projectId: string | null;
  aclUser: string | null;
  name?: string;
  algorithm?: string;
  mode?: string;
  bitLength?: number;
  secretType?: string;
  created?: DateBound[];
  updated?: DateBound[];
  expiration?: DateBound[];
  sort: Array<{ column: 'algorithm' | 'bit_length' | 'created_at' | 'expiration' | 'mode' | 'name' | 'secret_type' | 'updated_at'; direction: 'asc' | 'desc' }>;
  offset: number;
  limit: number;
}

export interface ConsumerKey {
  service: string;
  resourceType: string;
  resourceId: string;
}

const SQL_OP = { gt: '>', gte: '>=', lt: '<', lte: '<=', eq: '=' } as const;

export class KeyManagerStore {
  constructor(private readonly db: Db) {}

  private get k() {
    return this.db.kysely;
  }

  async insertSecret(row: SecretRow): Promise<void> {
    await this.k.insertInto('key_manager_secret').values(row).execute();
  }

  /** Expired secrets are gone, as in Barbican's repository. */
  async secret(id: string, now = timestamp()): Promise<SecretRow | undefined> {
    return this.k
      .selectFrom('key_manager_secret')
      .selectAll()
      .where('id', '=', id)
      .where((eb) => eb.or([eb('expiration', 'is', null), eb('expiration', '>', now)]))
      .executeTakeFirst();
  }

  async listSecrets(q: SecretQuery, now = timestamp()): Promise<Page<SecretRow>> {
    const aclIds = q.aclUser === null ? null : await this.aclGrantees('secret', q.aclUser);
    if (aclIds?.length === 0) return { rows: [], total: 0 };
    let query = this.k.selectFrom('key_manager_secret').where((eb) => eb.or([eb('expiration', 'is', null), eb('expiration', '>', now)]));
    query = aclIds ? query.where('id', 'in', aclIds) : query.where('project_id', '=', q.projectId ?? '');
    if (q.name) query = query.where('name', 'like', q.name);
    if (q.algorithm) query = query.where('algorithm', 'like', q.algorithm);
    if (q.mode) query = query.where('mode', 'like', q.mode);
    if (q.bitLength) query = query.where('bit_length', '=', q.bitLength);
    if (q.secretType) query = query.where('secret_type', '=', q.secretType);
    for (const [column, bounds] of [['created_at', q.created], ['updated_at', q.updated], ['expiration', q.expiration]] as const)
      for (const b of bounds ?? []) query = query.where(column, SQL_OP[b.op], b.value);
    const { total } = await query.select((eb) => eb.fn.countAll<number | string>().as('total')).executeTakeFirstOrThrow();
    let rows = query.selectAll();
    for (const s of q.sort) rows = rows.orderBy(s.column, s.direction);
    rows = rows.orderBy('created_at', 'asc').orderBy('id', 'asc');
    return { rows: await rows.limit(q.limit).offset(q.offset).execute(), total: Number(total) };
  }

  /** Stores the payload of a secret created without one; false if it already has one. */
  async setPayload(id: string, contentType: string, sealed: Sealed): Promise<boolean> {
    const result = await this.k
      .updateTable('key_manager_secret')
      .set({ content_type: contentType, key_id: sealed.keyId, nonce: sealed.nonce, ciphertext: sealed.ciphertext, auth_tag: sealed.tag, updated_at: preciseTimestamp() })
      .where('id', '=', id)
      .where('ciphertext', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** The secret leaves every container it was in, with its ACL and consumers. */
  async deleteSecret(id: string): Promise<void> {
    await this.deleteEntity('secret', id);
  }

  async insertContainer(row: ContainerRow, members: ReadonlyArray<{ name: string | null; secretId: string }>): Promise<void> {
    await this.k.transaction().execute(async (trx) => {
      await trx.insertInto('key_manager_container').values(row).execute();
      if (members.length)
        await trx
          .insertInto('key_manager_container_secret')
          .values(members.map((m, position) => ({ container_id: row.id, secret_id: m.secretId, name: m.name, position })))
          .execute();
    });
  }

  async container(id: string): Promise<ContainerRow | undefined> {
    return this.k.selectFrom('key_manager_container').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async members(containerIds: readonly string[]): Promise<MemberRow[]> {
    if (!containerIds.length) return [];
    return this.k.selectFrom('key_manager_container_secret').selectAll().where('container_id', 'in', containerIds).orderBy('position').execute();
  }

  async listContainers(projectId: string, filter: { name?: string; type?: string }, offset: number, limit: number): Promise<Page<ContainerRow>> {
    let query = this.k.selectFrom('key_manager_container').where('project_id', '=', projectId);
    if (filter.name) query = query.where('name', '=', filter.name);
    if (filter.type) query = query.where('type', '=', filter.type);
    const { total } = await query.select((eb) => eb.fn.countAll<number | string>().as('total')).executeTakeFirstOrThrow();
    const rows = await query.selectAll().orderBy('created_at').orderBy('id').limit(limit).offset(offset).execute();
    return { rows, total: Number(total) };
  }

  /** The secrets stay: a container only groups references. */
  async deleteContainer(id: string): Promise<void> {
    await this.deleteEntity('container', id);
  }

  /** The entity with its memberships, ACL and consumers, in one transaction. */
  private async deleteEntity(kind: EntityKind, id: string): Promise<void> {
    await this.k.transaction().execute(async (trx) => {
      await trx.deleteFrom('key_manager_container_secret').where(kind === 'secret' ? 'secret_id' : 'container_id', '=', id).execute();
      await trx.deleteFrom('key_manager_acl').where('entity_kind', '=', kind).where('entity_id', '=', id).execute();
      await trx.deleteFrom('key_manager_consumer').where('entity_kind', '=', kind).where('entity_id', '=', id).execute();
      await trx.deleteFrom(kind === 'secret' ? 'key_manager_secret' : 'key_manager_container').where('id', '=', id).execute();
    });
  }


  async acl(kind: EntityKind, id: string): Promise<AclRecord | undefined> {
    const row = await this.k.selectFrom('key_manager_acl').selectAll().where('entity_kind', '=', kind).where('entity_id', '=', id).where('operation', '=', 'read').executeTakeFirst();
    return row && keyManagerAclCodec.decode(row);
  }

  /** What the policy needs of an entity: its owner and read ACL. */
  async guard(kind: EntityKind, row: { id: string; project_id: string; creator_id: string | null }): Promise<Guarded> {
    const acl = await this.acl(kind, row.id);
    return {
      projectId: row.project_id,
      creatorId: row.creator_id,
      acl: acl ? { projectAccess: acl.project_access, users: acl.users } : null,
    };
  }

  async putAcl(kind: EntityKind, id: string, projectAccess: boolean, users: readonly string[]): Promise<void> {
    const now = preciseTimestamp();
    await this.k
      .insertInto('key_manager_acl')
      .values(keyManagerAclCodec.encode({ entity_kind: kind, entity_id: id, operation: 'read', project_access: projectAccess, users: [...users], created_at: now, updated_at: now }))
      .onConflict((oc) => oc.columns(['entity_kind', 'entity_id', 'operation']).doUpdateSet(keyManagerAclCodec.encode({ project_access: projectAccess, users: [...users], updated_at: now })))
      .execute();
  }

  async deleteAcl(kind: EntityKind, id: string): Promise<void> {
    await this.k.deleteFrom('key_manager_acl').where('entity_kind', '=', kind).where('entity_id', '=', id).execute();
  }

  /**
   * Ids of entities whose read ACL names the user. Users are JSON text: LIKE narrows (a `%` or
   * `_` in an id only widens the match), the parsed list decides.
   */
  private async aclGrantees(kind: EntityKind, userId: string): Promise<string[]> {
    const rows = await this.k
      .selectFrom('key_manager_acl')
      .select(['entity_id', 'users'])
      .where('entity_kind', '=', kind)
      .where('users', 'like', `%${JSON.stringify(userId)}%`)
      .execute();
    return rows.map(keyManagerAclCodec.decode).filter((r) => r.users.includes(userId)).map((r) => r.entity_id);
  }

  async consumers(kind: EntityKind, ids: readonly string[]): Promise<ConsumerRow[]> {
    if (!ids.length) return [];
    return this.k.selectFrom('key_manager_consumer').selectAll().where('entity_kind', '=', kind).where('entity_id', 'in', ids).orderBy('created_at').orderBy('service').orderBy('resource_id').execute();
  }

  /** Registering twice is registering once, as Barbican's create_or_update. */
  async addConsumer(kind: EntityKind, id: string, projectId: string | null, c: ConsumerKey): Promise<void> {
    await this.k
      .insertInto('key_manager_consumer')
      .values({ entity_kind: kind, entity_id: id, project_id: projectId, service: c.service, resource_type: c.resourceType, resource_id: c.resourceId, created_at: preciseTimestamp() })
      .onConflict((oc) => oc.columns(['entity_kind', 'entity_id', 'service', 'resource_type', 'resource_id']).doNothing())
      .execute();
  }

  async consumer(kind: EntityKind, id: string, c: ConsumerKey): Promise<ConsumerRow | undefined> {
    return this.k
      .selectFrom('key_manager_consumer')
      .selectAll()
      .where('entity_kind', '=', kind)
      .where('entity_id', '=', id)
      .where('service', '=', c.service)
      .where('resource_type', '=', c.resourceType)
      .where('resource_id', '=', c.resourceId)
      .executeTakeFirst();
  }

  async removeConsumer(kind: EntityKind, id: string, c: ConsumerKey): Promise<void> {
    await this.k
      .deleteFrom('key_manager_consumer')
      .where('entity_kind', '=', kind)
      .where('entity_id', '=', id)
      .where('service', '=', c.service)
      .where('resource_type', '=', c.resourceType)
      .where('resource_id', '=', c.resourceId)
      .execute();
  }
}
