/** A worker's database session on PostgreSQL (see controller/worker-session.ts). */
export interface WorkerSessionRecord {
  /** The lease owner its jobs name. */
  owner: string;
  /** The second key of the session-level advisory lock the session holds while it lives. */
  lock_key: number;
  started_at: string;
}
