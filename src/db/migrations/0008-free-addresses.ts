import type { Kysely } from 'kysely';

/**
 * The free-address index of each subnet (network/free-addresses.ts): the ranges of its allocation
 * pools no port holds, so an allocation reads the lowest range instead of every port of the
 * subnet, and the pools those ranges were laid along (also the row a subnet's allocations lock).
 * A subnet's pools are configuration, not rows, so nothing here can lay its ranges out: each
 * subnet's index is built from its ports on the first allocation that finds no index or one laid
 * along other pools. Ports are found by their device when a load balancer or an amphora goes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('subnet_allocation')
    .addColumn('subnet_id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('pools', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('free_address')
    .addColumn('subnet_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('first_key', 'varchar(39)', (c) => c.notNull())
    .addColumn('last_key', 'varchar(39)', (c) => c.notNull())
    .addPrimaryKeyConstraint('free_address_pk', ['subnet_id', 'first_key'])
    .execute();
  await db.schema.createIndex('port_device').on('port').column('device_id').execute();
  await db.schema.createIndex('port_subnet_created').on('port').columns(['subnet_id', 'created_at']).execute();
}
