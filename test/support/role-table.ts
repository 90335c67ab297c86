/**
 * The README's table of roles and policy modes ("Roles and policies"), read from the README
 * itself: the policy rules and the API are both tested against it, so the table a user reads is
 * the one that is tested.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PolicyModes, type PolicyMode } from '../../src/domain/context.js';
import { repoRoot } from './ostia-process.js';

/** What a role may do, in the words of the README's table; 'everything' is all of them and more (administration). */
export type Grant = 'read own' | 'write own' | 'read all' | 'quotas' | 'list members' | 'everything';

/** A cell's words → the grants they stand for. */
const CELLS: Readonly<Record<string, Grant[]>> = {
  '—': [],
  'read own': ['read own'],
  'read + write own': ['read own', 'write own'],
  'read all': ['read all'],
  quotas: ['quotas'],
  'list members of any pool': ['list members'],
  everything: ['everything'],
};

/** A row's first cell → the roles it is about ('' = none, or a role no rule names). */
function rolesOf(label: string): string[] {
  if (label === 'none, or another role') return [''];
  const roles = [...label.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  if (!roles.length) throw new Error(`README role table: cannot read the roles of row '${label}'`);
  return roles;
}

function readRoleTable(): Record<string, Record<PolicyMode, Grant[]>> {
  const lines = readFileSync(join(repoRoot(), 'README.md'), 'utf8').split('\n');
  const head = lines.findIndex((l) => /^\| role \|/.test(l));
  if (head < 0) throw new Error("README.md has no '| role | …' table under Roles and policies");
  const cells = (line: string) => line.split('|').slice(1, -1).map((c) => c.trim());
  const modes = cells(lines[head]!).slice(1).map((c) => c.replace(/`/g, '')) as PolicyMode[];
  if (modes.join() !== PolicyModes.join()) throw new Error(`README role table: columns ${modes.join(', ')}, expected ${PolicyModes.join(', ')}`);
  const table: Record<string, Record<PolicyMode, Grant[]>> = {};
  for (const line of lines.slice(head + 2)) {
    if (!line.startsWith('|')) break;
    const [label, ...row] = cells(line);
    const byMode = Object.fromEntries(
      modes.map((mode, i) => {
        const grants = CELLS[row[i]!];
        if (!grants) throw new Error(`README role table: unknown cell '${row[i]}' in row '${label}'`);
        return [mode, grants];
      }),
    ) as Record<PolicyMode, Grant[]>;
    for (const role of rolesOf(label!)) table[role] = byMode;
  }
  return table;
}

/** Role held on the caller's project ('' = none) → what each api.policy grants it. */
export const ROLE_TABLE = readRoleTable();
