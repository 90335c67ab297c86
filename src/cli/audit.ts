/**
 * `ostia audit`: is this service, and an Octavia, exposed to an advisory (advisories/*.yaml)? For each:
 * this service's own verdict on every field it names (the advisory's hostile value put to the API's and
 * the renderer's checks), the values those fields hold on load balancers of the providers it names, and
 * which of them hold what its fix refuses; given an Octavia version or endpoint, whether it lacks a fix.
 */
import type { Db } from '../db/database.js';
import { advisoriesDir, loadAdvisories, type Advisory } from './audit/advisory.js';
import { describeVerdict, fieldVerdict, type FieldVerdict } from './audit/field-checks.js';
import { judgeEndpoint, judgeRelease, type VersionVerdict } from './audit/octavia-version.js';
import { storedValues, type StoredValue } from './audit/stored-values.js';
import { CliError, formatTable, printJson, usageError, type Command } from './command.js';
import { configFromFlags, databaseOption, dataDirOption, openExisting } from './settings.js';
import { printable } from './terminal-text.js';

/** The exit code when something is exposed, apart from 1 (the audit itself failed) and 2 (usage). */
export const EXPOSED_EXIT = 3;
const ENDPOINT_TIMEOUT_MS = 10_000;

export interface AdvisoryAudit {
  id: string;
  title: string;
  url: string | null;
  fields: Array<FieldVerdict & { fix: string; probe: string; verdict: string }>;
  stored: StoredValue[];
  /** Stored values holding what the fix refuses. */
  exposed: number;
  verdict: string;
  octavia: VersionVerdict | null;
}

export const audit: Command = {
  name: 'audit',
  summary: "Check this service's load balancers, its own checks, and an Octavia's version against each advisory in advisories/.",
  options: {
    ...dataDirOption,
    ...databaseOption,
    advisory: { type: 'string', value: 'ID|FILE', help: 'only this advisory: an id of advisories/ (e.g. OSSA-2026-039) or a .yaml file of that shape' },
    'octavia-version': { type: 'string', value: 'VERSION', help: "also judge this Octavia release (e.g. 16.0.0, from 'pip show octavia')" },
    'octavia-url': { type: 'string', value: 'URL', help: "also judge the Octavia at this endpoint, from its version document (the newest API version it serves)" },
  },
  details: [
    'Reads the database of the Ostia named by --data-dir (SQLite) or --database-url; the service need not be running.',
    "For each field an advisory names: the API's answer and the renderer's to the advisory's hostile value, as a request",
    'and a configuration push would meet them; then every value those fields hold on load balancers of the providers',
    'the advisory names, marking those that hold a character its fix refuses.',
    `Exit status: 0 nothing exposed, ${EXPOSED_EXIT} a stored value the fix refuses or an affected Octavia, 1 the audit failed, 2 usage.`,
  ].join('\n'),
  async run(input) {
    const v = input.values as Record<string, string | undefined>;
    if (v['octavia-version'] !== undefined && v['octavia-url'] !== undefined) throw usageError(audit, 'give --octavia-version or --octavia-url, not both');
    const config = configFromFlags(audit, input);
    let advisories: Advisory[];
    try {
      advisories = loadAdvisories(advisoriesDir(), v.advisory);
    } catch (e) {
      throw new CliError((e as Error).message, "Name an advisory of advisories/ by its id, or a .yaml file of that shape (see advisories/OSSA-2026-039.yaml).");
    }
    const db = await openExisting(config);
    let audits: AdvisoryAudit[];
    try {
      audits = [];
      for (const advisory of advisories) audits.push(await auditOne(db, advisory, v['octavia-version'], v['octavia-url']));
    } finally {
      await db.close();
    }
    if (input.json) printJson({ advisories: audits });
    else process.stdout.write(audits.map(render).join('\n'));
    return audits.some((a) => a.exposed > 0 || a.octavia?.verdict === 'affected') ? EXPOSED_EXIT : 0;
  },
};

export async function auditOne(db: Db, advisory: Advisory, octaviaVersion?: string, octaviaUrl?: string): Promise<AdvisoryAudit> {
  const fields = advisory.fixes.flatMap((fix) =>
    fix.fields.map((f) => {
      const verdict = fieldVerdict(f, fix.probe);
      return { ...verdict, fix: fix.name, probe: fix.probe, verdict: describeVerdict(verdict) };
    }),
  );
  let stored: StoredValue[];
  try {
    stored = await storedValues(db, advisory);
  } catch (e) {
    throw new CliError((e as Error).message, 'Check the advisory file: each field must be a column of its resource.');
  }
  let octavia: VersionVerdict | null = null;
  try {
    if (octaviaVersion !== undefined) octavia = judgeRelease(advisory, octaviaVersion);
    else if (octaviaUrl !== undefined) octavia = await judgeEndpoint(advisory, octaviaUrl, AbortSignal.timeout(ENDPOINT_TIMEOUT_MS));
  } catch (e) {
    throw new CliError((e as Error).message, octaviaUrl !== undefined ? "Give the endpoint's base URL (e.g. http://controller:9876), or its release with --octavia-version." : 'Give a release version such as 16.1.0.');
  }
  const exposed = stored.filter((s) => s.refused_character !== null).length;
  return { id: advisory.id, title: advisory.title, url: advisory.url ?? null, fields, stored, exposed, verdict: storedVerdict(advisory, fields, stored, exposed), octavia };
}

function storedVerdict(advisory: Advisory, fields: AdvisoryAudit['fields'], stored: StoredValue[], exposed: number): string {
  const names = [...new Set(advisory.fixes.flatMap((f) => f.fields.map((x) => x.field)))].join(', ');
  const on = advisory.providers.join(' or ');
  const guarded = fields.every((f) => f.apiRefusal !== null && (f.render === null || 'refused' in f.render));
  const guard = guarded ? 'this service refuses such values at the API and again in the renderer' : 'some of these fields are not refused by both checks of this service (above)';
  if (!stored.length) return `No load balancer on ${on} holds a value in ${names}: nothing stored is exposed; ${guard}.`;
  if (!exposed) return `${stored.length} value(s) of ${names} on ${on} load balancers, none holding what the fix refuses; ${guard}.`;
  return (
    `${exposed} of ${stored.length} stored value(s) hold what the fix refuses (marked): stored before the check or around the API. ` +
    `${guarded ? "This service's renderer refuses them, so their load balancer's next configuration push fails instead of running them" : 'Check the renderer verdicts above'}; ` +
    'set each field anew (PUT), or clear it, and the load balancer is pushed again.'
  );
}

function render(a: AdvisoryAudit): string {
  const lines = [`${a.id}: ${a.title}`, ...(a.url ? [`  ${a.url}`] : []), '', "This service, given the advisory's hostile value for each field:"];
  lines.push(
    formatTable([
      ['FIX', 'FIELD', 'API', 'RENDERER'],
      ...a.fields.map((f) => [
        f.fix,
        `${f.resource}.${f.field}`,
        f.apiRefusal === null ? 'ACCEPTED' : 'refused (400)',
        f.render === null ? 'no check known' : 'refused' in f.render ? 'refused' : 'ACCEPTED, rendered',
      ]),
    ]).trimEnd(),
    ...a.fields.map((f) => printable(`  ${f.resource}.${f.field}: ${f.verdict}`)),
  );
  lines.push('');
  if (a.stored.length)
    lines.push(
      formatTable([
        ['LOAD BALANCER', 'PROJECT', 'PROVIDER', 'OBJECT', 'FIELD', 'VALUE', 'FIX REFUSES'],
        ...a.stored.map((s) => [s.load_balancer_id, s.project_id, s.provider, `${s.resource} ${s.object_id}`, s.field, JSON.stringify(s.value), s.refused_character ?? '']),
      ]).trimEnd(),
      '',
    );
  lines.push(`Verdict: ${a.verdict}`);
  if (a.octavia) lines.push('', `Octavia (${a.octavia.source}, releases ${a.octavia.releases}): ${a.octavia.verdict.toUpperCase()}: ${a.octavia.reason}.`);
  return lines.join('\n') + '\n';
}
