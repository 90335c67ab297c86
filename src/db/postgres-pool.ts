/** A pg Pool that survives its server dropping idle connections and closes for real. */
import { once } from 'node:events';
import type { Pool } from 'pg';

export interface ClosablePool {
  readonly pool: Pool;
  /** Ends the pool and resolves once every connection is closed, not merely asked to close. */
  end(): Promise<void>;
}

export async function openPostgresPool(url: string, max: number): Promise<ClosablePool> {
  const pg = await import('pg');
  const pool = new pg.default.Pool({ connectionString: url, max });
  // An idle connection the server ends (a restart, an administrator, a dropped database) is
  // discarded by the pool, which then emits 'error': without a listener that would end the process.
  // The next query opens a new connection, so there is nothing more to do here.
  pool.on('error', () => undefined);
  let open = 0;
  pool.on('connect', () => open++);
  pool.on('remove', () => open--);
  return {
    pool,
    async end() {
      // pool.end() resolves once it has asked each connection to close; 'remove' follows each close.
      await pool.end();
      while (open > 0) await once(pool, 'remove');
    },
  };
}
