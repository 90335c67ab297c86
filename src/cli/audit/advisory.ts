/**
 * Advisories as data (advisories/*.yaml at the checkout's root): which fields an advisory names, what its
 * fixes refuse in them, and which Octavia releases lack each fix. `ostia audit` reads every file there, so
 * the next advisory is a new file, not new code.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { validRange } from 'semver';
import { parse as parseYaml } from 'yaml';

/** The resources an advisory may name, as the API calls them. */
export const AUDITED_RESOURCES = ['loadbalancer', 'listener', 'pool', 'member', 'healthmonitor', 'l7policy', 'l7rule'] as const;

const Field = Type.Object({ resource: Type.Union(AUDITED_RESOURCES.map((r) => Type.Literal(r))), field: Type.String({ pattern: '^[a-z_]+$' }) }, { additionalProperties: false });

const Fix = Type.Object(
  {
    name: Type.String(),
    cves: Type.Array(Type.String()),
    bug: Type.Optional(Type.String()),
    fields: Type.Array(Field, { minItems: 1 }),
    /** A regular expression (JavaScript, unicode): a stored value it matches is one the fix refuses. */
    refuses: Type.String(),
    refusesText: Type.String(),
    /** A hostile value, put to this service's own checks of each field. */
    probe: Type.String(),
    /** semver ranges of the Octavia releases without this fix. */
    affected: Type.Array(Type.String(), { minItems: 1 }),
  },
  { additionalProperties: false },
);

const AdvisorySchema = Type.Object(
  {
    id: Type.String({ pattern: '^[A-Za-z0-9._-]+$' }),
    title: Type.String(),
    url: Type.Optional(Type.String()),
    providers: Type.Array(Type.String(), { minItems: 1 }),
    fixes: Type.Array(Fix, { minItems: 1 }),
  },
  { additionalProperties: false },
);

export type Advisory = Static<typeof AdvisorySchema>;
export type AdvisoryFix = Advisory['fixes'][number];
export type AuditedField = AdvisoryFix['fields'][number];

/** advisories/ of the checkout this file is part of (src/cli/audit or dist/src/cli/audit). */
export function advisoriesDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!readdirSync(dir).includes('package.json')) {
    const up = dirname(dir);
    if (up === dir) throw new Error('the advisories directory was not found above the program');
    dir = up;
  }
  return join(dir, 'advisories');
}

/** Parses and checks one advisory file; the error names the file and what is wrong. */
export function readAdvisory(file: string): Advisory {
  let data: unknown;
  try {
    data = parseYaml(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`advisory ${file}: ${(e as Error).message}`);
  }
  const error = Value.Errors(AdvisorySchema, data).First();
  if (error) throw new Error(`advisory ${file}: ${error.path || '/'} ${error.message}`);
  const advisory = data as Advisory;
  for (const fix of advisory.fixes) {
    try {
      new RegExp(fix.refuses, 'u');
    } catch (e) {
      throw new Error(`advisory ${file}: fix ${fix.name}: refuses is not a regular expression: ${(e as Error).message}`);
    }
    for (const range of fix.affected) if (validRange(range) === null) throw new Error(`advisory ${file}: fix ${fix.name}: '${range}' is not a version range`);
  }
  return advisory;
}

/** Every advisory of `dir`, by id; `only` (an id or a file) narrows them to one. */
export function loadAdvisories(dir: string, only?: string): Advisory[] {
  if (only && /[/.]/.test(only) && only.endsWith('.yaml')) return [readAdvisory(resolve(only))];
  const all = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => readAdvisory(join(dir, f)));
  if (!only) return all;
  const found = all.filter((a) => a.id === only);
  if (!found.length) throw new Error(`no advisory ${only} in ${dir} (there: ${all.map((a) => a.id).join(', ') || 'none'})`);
  return found;
}

/** The first character of `value` the fix refuses, as U+XXXX, or null. */
export function refusedCharacter(fix: AdvisoryFix, value: string): string | null {
  const match = new RegExp(fix.refuses, 'u').exec(value);
  return match ? `U+${match[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}` : null;
}
