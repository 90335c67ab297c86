/** `ostia trace <lb-id>`: the provisioning steps a load balancer's jobs ran, from the database. */
import type { TraceEntry } from '../controller/trace.js';
import { CliError, formatTable, printJson, type Command } from './command.js';
import { configFromFlags, databaseOption, dataDirOption, openExisting, redactUrl } from './settings.js';

export const trace: Command = {
  name: 'trace',
  summary: "Print a load balancer's provisioning trace: every step its jobs ran, with start time, duration and error.",
  positionals: ['lb-id'],
  options: { ...dataDirOption, ...databaseOption },
  details: 'Reads the database of the Ostia named by --data-dir (SQLite) or --database-url; the service need not be running.',
  async run(input) {
    const config = configFromFlags(trace, input);
    const lbId = input.positionals[0]!;
    const db = await openExisting(config);
    // Loaded here, not at the top: `--help` should not wait for the database drivers.
    const { readTrace } = await import('../controller/trace.js');
    try {
      const lb = (await db.kysely.selectFrom('load_balancer').select(['id', 'name', 'provisioning_status']).where('id', '=', lbId).executeTakeFirst()) ?? null;
      const steps = await readTrace(db, lbId);
      if (!lb && !steps.length)
        throw new CliError(`no load balancer ${lbId} in the database ${redactUrl(config.database.url)}`, "Check the id (openstack loadbalancer list) and that --data-dir or --database-url name the database Ostia runs on.");
      if (input.json) printJson({ load_balancer: lb, steps });
      else process.stdout.write(`${heading(lbId, lb)}\n${steps.length ? table(steps) : 'No steps recorded yet.\n'}`);
      return 0;
    } finally {
      await db.close();
    }
  },
};

function heading(lbId: string, lb: { name: string | null; provisioning_status: string } | null): string {
  if (!lb) return `Load balancer ${lbId} (deleted)`;
  return `Load balancer ${lbId}${lb.name ? ` (${lb.name})` : ''}: ${lb.provisioning_status}`;
}

function table(steps: TraceEntry[]): string {
  const rows = [
    ['OPERATION', 'STEP', 'START', 'DURATION MS', 'ERROR'],
    ...steps.map((s) => [s.operation, s.step, s.started_at, s.duration_ms === null ? 'running' : s.duration_ms.toFixed(3), (s.error ?? '').replace(/\s+/g, ' ')]),
  ];
  return formatTable(rows, [3]);
}
