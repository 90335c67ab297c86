/** What every object of a load balancer's tree renders the same way (listing.ts's treeAttributes). */
import type { Row } from '../../db/records/codec.js';
import { treeObjectCodec, type TreeObject } from '../../db/records/tree-object.js';

export function treeFields(row: Row<TreeObject>) {
  return {
    id: row.id,
    provisioning_status: row.provisioning_status,
    operating_status: row.operating_status,
    admin_state_up: treeObjectCodec.decode({ admin_state_up: row.admin_state_up }).admin_state_up,
    project_id: row.project_id,
    // Octavia still renders the deprecated duplicate, and upstream tests assert it.
    tenant_id: row.project_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * A tree object's wire form: its own fields, then the common ones. Not a spread and not the common
 * fields first: Node 20's V8 adds each property that follows a spread in a literal on a slow path
 * (~3 µs each), and an object that gains more than a dozen properties after its literal turns into
 * a slow dictionary; both were most of what a list of 100 load balancers cost. JSON clients do not
 * read the order of keys.
 */
export function treeView<T extends object>(row: Row<TreeObject>, own: T): T & ReturnType<typeof treeFields> {
  return Object.assign(own, treeFields(row));
}
