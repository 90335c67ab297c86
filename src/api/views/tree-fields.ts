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
