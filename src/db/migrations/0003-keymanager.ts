import type { Kysely } from 'kysely';

/**
 * The embedded key manager: secrets (payload encrypted at rest), certificate containers,
 * read ACLs and consumers. A secret row without ciphertext is one whose payload is still to
 * be PUT (Barbican's two-step create).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('key_manager_secret')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('project_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('creator_id', 'varchar(64)')
    .addColumn('name', 'varchar(255)')
    .addColumn('secret_type', 'varchar(80)', (c) => c.notNull())
    .addColumn('algorithm', 'varchar(255)')
    .addColumn('bit_length', 'integer')
    .addColumn('mode', 'varchar(255)')
    .addColumn('expiration', 'varchar(32)')
    .addColumn('content_type', 'varchar(64)')
    .addColumn('key_id', 'varchar(32)')
    .addColumn('nonce', 'varchar(32)')
    .addColumn('ciphertext', 'text')
    .addColumn('auth_tag', 'varchar(32)')
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('key_manager_secret_project').on('key_manager_secret').column('project_id').execute();

  await db.schema
    .createTable('key_manager_container')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('project_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('creator_id', 'varchar(64)')
    .addColumn('name', 'varchar(255)')
    .addColumn('type', 'varchar(16)', (c) => c.notNull())
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('key_manager_container_project').on('key_manager_container').column('project_id').execute();

  await db.schema
    .createTable('key_manager_container_secret')
    .addColumn('container_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('secret_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('name', 'varchar(255)')
    .addColumn('position', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('key_manager_container_secret_pk', ['container_id', 'secret_id'])
    .execute();
  await db.schema.createIndex('key_manager_container_secret_secret').on('key_manager_container_secret').column('secret_id').execute();

  await db.schema
    .createTable('key_manager_acl')
    .addColumn('entity_kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('entity_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('operation', 'varchar(16)', (c) => c.notNull())
    .addColumn('project_access', 'integer', (c) => c.notNull())
    .addColumn('users', 'text', (c) => c.notNull())
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
    .addPrimaryKeyConstraint('key_manager_acl_pk', ['entity_kind', 'entity_id', 'operation'])
    .execute();

  await db.schema
    .createTable('key_manager_consumer')
    .addColumn('entity_kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('entity_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('project_id', 'varchar(64)')
    .addColumn('service', 'varchar(255)', (c) => c.notNull())
    .addColumn('resource_type', 'varchar(255)', (c) => c.notNull())
    .addColumn('resource_id', 'varchar(255)', (c) => c.notNull())
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addPrimaryKeyConstraint('key_manager_consumer_pk', ['entity_kind', 'entity_id', 'service', 'resource_type', 'resource_id'])
    .execute();
}
