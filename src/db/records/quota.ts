/** A project's limits per resource: null = the deployment's default, -1 = unlimited. */
export interface QuotaRecord {
  project_id: string;
  load_balancer: number | null;
  listener: number | null;
  pool: number | null;
  health_monitor: number | null;
  member: number | null;
  l7policy: number | null;
  l7rule: number | null;
}
