/** `ostia trace <load-balancer>` (id or name): the provisioning steps a load balancer's jobs ran, from the database. */
import type { TraceEntry } from '../controller/trace.js';
import { CliError, formatTable, printJson, writeLine, type Command } from './command.js';
import { resolveLoadBalancer } from './load-balancer-arg.js';
import { configFromFlags, databaseOption, dataDirOption, openExisting, redactUrl } from './settings.js';

export const trace: Command = {
  name: 'trace',
  summary: "Print a load balancer's provisioning trace: every step its jobs ran, with start time, duration and error.",
  positionals: ['load-balancer'],
  options: { ...dataDirOption, ...databaseOption },
  details: [
    'LOAD-BALANCER is an id or a unique name, as the openstack CLI takes it; the heading names both.',
    'Reads the database of the Ostia named by --data-dir (SQLite) or --database-url; the service need not be running.',
  ].join('\n'),
  async run(input) {
    const config = configFromFlags(trace, input);
    const arg = input.positionals[0]!;
    const db = await openExisting(config);
    // Loaded here, not at the top: `--help` should not wait for the database drivers.
    const { readTrace } = await import('../controller/trace.js');
    try {
      const lb = await resolveLoadBalancer(db, arg);
      const lbId = lb?.id ?? arg;
      const steps = await readTrace(db, lbId);
      if (!lb && !steps.length)
        throw new CliError(
          `no load balancer with the id or name '${arg}' in the database ${redactUrl(config.database.url)}`,
          "Check it (openstack loadbalancer list) and that --data-dir or --database-url name the database Ostia runs on.",
        );
      if (lb?.by === 'name' && !input.json) writeLine(process.stderr, `ostia trace: '${arg}' is load balancer ${lb.id}`);
      if (input.json) printJson({ load_balancer: lb && { id: lb.id, name: lb.name, provisioning_status: lb.provisioning_status }, resolved_by: lb?.by ?? 'id', steps });
      else {
        writeLine(process.stdout, heading(lbId, lb));
        process.stdout.write(steps.length ? table(steps) : 'No steps recorded yet.\n');
      }
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
