/** `ostia certs`: every certificate listeners and pools use, soonest to expire first, from the database. */
import type { Config } from '../config.js';
import { CertificateExpiryWarningDays } from '../domain/defaults.js';
import { listCertificatesInUse } from '../certificate-use/expiry-list.js';
import type { CertificateLine } from '../domain/certificate-expiry.js';
import { CliError, formatTable, printJson, usageError, type Command } from './command.js';
import { configFromFlags, databaseError, databaseOption, dataDirOption, openExisting, redactUrl } from './settings.js';

export const certs: Command = {
  name: 'certs',
  summary: 'List the certificates, CA bundles and CRLs listeners and pools use, soonest to expire first, with owner project and reference.',
  options: {
    ...dataDirOption,
    ...databaseOption,
    within: { type: 'string', value: 'DAYS', help: 'only those expiring within DAYS days (expired ones included)' },
  },
  details: [
    'Reads the database of the Ostia named by --data-dir (SQLite) or --database-url; the service need not be running.',
    'Each line is one reference one listener or pool uses, in its role: default, sni, client_ca, client_crl (listener);',
    'certificate, ca, crl (pool). Not-after is UTC; for a CA bundle, its earliest certificate; for a CRL, its next update.',
    `Within ${CertificateExpiryWarningDays.join(', ')} days of expiry a line carries a warning, as the log and the status tree do.`,
    'What is recorded is what each load balancer used when its last job finished.',
  ].join('\n'),
  async run(input) {
    const config = configFromFlags(certs, input);
    const within = withinDays(input.values.within as string | undefined);
    const lines = await listCertificates(config, within);
    if (input.json) printJson({ certificates: lines });
    else if (!lines.length) process.stdout.write(within === null ? 'No certificates in use.\n' : `No certificate in use expires within ${within} days.\n`);
    else process.stdout.write(table(lines));
    return 0;
  },
};

function withinDays(text: string | undefined): number | null {
  if (text === undefined) return null;
  const days = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !Number.isFinite(days)) throw usageError(certs, `--within must be a number of days, got '${text}'`);
  return days;
}

export async function listCertificates(config: Config, within: number | null, now = new Date()): Promise<CertificateLine[]> {
  const db = await openExisting(config);
  try {
    return await listCertificatesInUse(db.kysely, within === null ? {} : { withinDays: within }, now).catch((e: unknown) => {
      throw missingTable(e, config) ?? databaseError(e, config);
    });
  } finally {
    await db.close();
  }
}

/** Not Ostia's database, or one an older Ostia wrote, which the next start of this version migrates. */
function missingTable(e: unknown, config: Config): CliError | null {
  const { code, message } = e as { code?: string; message?: string };
  if (code !== '42P01' && !/no such table/.test(message ?? '')) return null;
  return new CliError(
    `the database ${redactUrl(config.database.url)} has no table of certificates in use`,
    "Check that --data-dir or --database-url name the database Ostia runs on; an older Ostia's database is upgraded when this version starts ('ostia up', or 'ostia api' and 'ostia worker').",
  );
}

function table(lines: CertificateLine[]): string {
  const rows = [
    ['OBJECT', 'ID', 'LOAD BALANCER', 'PROJECT', 'ROLE', 'REFERENCE', 'NOT AFTER (UTC)', 'DAYS', 'WARNING'],
    ...lines.map((l) => [l.object_kind, l.object_id, l.load_balancer_id, l.project_id, l.role, l.ref, l.not_after, l.days_to_expiry.toFixed(1), l.warning ?? '']),
  ];
  const DAYS = 7;
  return formatTable(rows, [DAYS]);
}
