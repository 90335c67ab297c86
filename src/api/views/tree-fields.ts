/** What every object of a load balancer's tree renders the same way (listing.ts's treeAttributes). */
export interface TreeRow {
  id: string;
  provisioning_status: string;
  operating_status: string;
  admin_state_up: number;
  project_id: string;
  created_at: string;
  updated_at: string | null;
}

export function treeFields(row: TreeRow) {
  return {
    id: row.id,
    provisioning_status: row.provisioning_status,
    operating_status: row.operating_status,
    admin_state_up: row.admin_state_up === 1,
    project_id: row.project_id,
    // Octavia still renders the deprecated duplicate, and upstream tests assert it.
    tenant_id: row.project_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
