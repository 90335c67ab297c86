/**
 * The architecture checks itself, from the imports of every non-test file under src/ (type-only
 * imports included): no import goes up a layer or from one provider (or compute/network driver)
 * into another, no cycle between folders or between files, product code imports no test code,
 * and the README's module map says what each folder really uses.
 *
 * A module is a folder under src/ (`api`) or a file at its top (`config.ts` is `config`).
 * Test code is `*.test.ts`; test helpers live under test/support/, outside src/.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cycles, readImportGraph, type ImportGraph } from '../test/support/import-graph.js';
import { repoRoot } from '../test/support/ostia-process.js';

/**
 * The layers, lowest first: a module imports only modules of layers below its own. The README's
 * module map ("Architecture", its "uses" column) is checked against the real imports below, so a
 * change of layers shows there too. A new folder gets a row here and one in the README.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['domain'],
  ['linux-net'],
  ['config', 'db', 'pki', 'compute', 'ovn', 'tls'],
  ['amphora-agent', 'amphora-client', 'identity', 'network', 'keymanager', 'operating-status'],
  ['certificate-use'],
  ['provider-contract'],
  // Neither imports the other: both import the contract below them.
  ['providers', 'controller'],
  // The capacity planner and provider advisor: the API serves them, the CLI prints them.
  ['tools'],
  ['api'],
  ['runtime'],
  ['cli'],
];

/** Folders whose sub-folders are interchangeable implementations: none imports another. */
const IMPLEMENTATION_FOLDERS = ['providers', 'compute', 'network'];

const root = repoRoot();
const isProduct = (file: string) => file.startsWith('src/') && !file.endsWith('.test.ts');

/** The module a file of src/ belongs to. */
function moduleOf(file: string): string {
  const [, first, second] = file.split('/');
  return second === undefined ? first!.replace(/\.ts$/, '') : first!;
}

const layerOf = new Map(LAYERS.flatMap((names, layer) => names.map((name) => [name, layer] as const)));
const edgeText = (from: string, to: string) => `${from} -> ${to}`;

/** The product files with their imports. */
function productGraph(all: ImportGraph): Map<string, string[]> {
  return new Map([...all].filter(([file]) => isProduct(file)).map(([file, targets]) => [file, [...targets]]));
}

/** Module -> the modules its files import, from a file graph. */
function moduleGraph(files: ReadonlyMap<string, readonly string[]>): Map<string, Set<string>> {
  const modules = new Map<string, Set<string>>();
  for (const [file, targets] of files) {
    const uses = modules.get(moduleOf(file)) ?? new Set<string>();
    for (const to of targets) if (isProduct(to) && moduleOf(to) !== moduleOf(file)) uses.add(moduleOf(to));
    modules.set(moduleOf(file), uses);
  }
  return modules;
}

function upALayer(from: string, to: string): boolean {
  const a = moduleOf(from);
  const b = moduleOf(to);
  return a !== b && !(layerOf.get(b)! < layerOf.get(a)!);
}

/** `src/providers/ovn/x.ts` -> `providers/ovn`; undefined outside an implementation folder. */
function implementationOf(file: string): string | undefined {
  const [, folder, sub, rest] = file.split('/');
  return IMPLEMENTATION_FOLDERS.includes(folder!) && rest !== undefined ? `${folder}/${sub}` : undefined;
}

function acrossImplementations(from: string, to: string): boolean {
  const a = implementationOf(from);
  const b = implementationOf(to);
  return a !== undefined && b !== undefined && a !== b && a.split('/')[0] === b.split('/')[0];
}

/** The README's module map: module -> the modules its "uses" cell names. */
function readmeModuleMap(): Map<string, Set<string>> {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.split(/^## Architecture$/m)[1]?.split(/^## /m)[0];
  assert.ok(section, 'README.md has a "## Architecture" section');
  const rows = section.split('\n').filter((line) => line.startsWith('| `'));
  assert.ok(rows.length > 0, 'the Architecture section of README.md has a module table');
  const map = new Map<string, Set<string>>();
  for (const row of rows) {
    const cells = row.split('|').slice(1, -1).map((c) => c.trim());
    const names = [...cells[0]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\/$/, '').replace(/\.ts$/, ''));
    // Parentheses say what of a module is used; the check is on the modules.
    const used = cells[cells.length - 1]!.replace(/\([^)]*\)/g, '');
    const uses = used.trim() === 'nothing else' ? [] : used.split(',').map((u) => u.trim());
    for (const name of names) {
      assert.ok(!map.has(name), `README.md's module map has two rows for ${name}`);
      map.set(name, new Set(uses));
    }
  }
  return map;
}

const sorted = (names: Iterable<string>) => [...names].sort();

describe('architecture', () => {
  const files = productGraph(readImportGraph(root, 'src'));

  it('puts every module in exactly one layer, and names no module that does not exist', () => {
    const modules = new Set([...files.keys()].map(moduleOf));
    const layered = LAYERS.flat();
    assert.deepEqual(layered.filter((m, i) => layered.indexOf(m) !== i), [], 'a module in two layers');
    assert.deepEqual(sorted([...modules].filter((m) => !layerOf.has(m))), [], 'modules missing from LAYERS: add each to the layer above everything it imports');
    assert.deepEqual(layered.filter((m) => !modules.has(m)), [], 'LAYERS names modules that no longer exist');
  });

  it('has no import that goes up a layer', () => {
    const up = [...files].flatMap(([from, targets]) => targets.filter((to) => isProduct(to) && upALayer(from, to)).map((to) => edgeText(from, to)));
    assert.deepEqual(up, [], 'imports up a layer (LAYERS above says which module sits where)');
  });

  it('has no import from one provider, compute driver or network driver into another', () => {
    const across = [...files].flatMap(([from, targets]) => targets.filter((to) => acrossImplementations(from, to)).map((to) => edgeText(from, to)));
    assert.deepEqual(across, [], 'an implementation imports a sibling: move what they share into their parent folder');
  });

  it('has product code import no test code', () => {
    const test = [...files].flatMap(([from, targets]) => targets.filter((to) => !isProduct(to)).map((to) => edgeText(from, to)));
    assert.deepEqual(test, [], 'product code importing tests or test/support');
  });

  it('has no import cycle between folders', () => {
    const modules = moduleGraph(files);
    const found = cycles(modules.keys(), (m) => modules.get(m) ?? []).map(sorted);
    assert.deepEqual(found, [], 'modules that import each other, directly or around a cycle');
  });

  it('has no import cycle between files', () => {
    const found = cycles(files.keys(), (f) => (files.get(f) ?? []).filter(isProduct)).map(sorted);
    assert.deepEqual(found, [], 'files that import each other, directly or around a cycle');
  });

  it("has the README's module map name what each module really uses", () => {
    const readme = readmeModuleMap();
    const real = moduleGraph(files);
    assert.deepEqual(sorted(readme.keys()), sorted(real.keys()), "README.md's module map has one row per module of src/");
    const wrong = sorted(real.keys()).flatMap((m) => {
      const said = sorted(readme.get(m) ?? []);
      const is = sorted(real.get(m)!);
      return said.join(', ') === is.join(', ') ? [] : [`${m}: README says "${said.join(', ') || 'nothing else'}", the imports say "${is.join(', ') || 'nothing else'}"`];
    });
    assert.deepEqual(wrong, [], "README.md's module map (the \"uses\" column) differs from the imports");
  });
});
