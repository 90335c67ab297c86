/**
 * The imports between Ostia's own files, read from the TypeScript sources (type-only imports
 * count: a type is as much a dependency as a value), for the architecture test.
 *
 * The sources follow one shape, which a few patterns read without a parser: static imports and
 * re-exports start a line (`import … from '…'`, `export … from '…'`, `import '…'`), lazy ones are
 * `import('…')` and `new URL('…', import.meta.url)` (a worker thread's file). Only relative
 * specifiers name a file of ours; a package or `node:` module is not an edge.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';

/** Repo-relative paths (`src/api/graph.ts`), each with the repo-relative files it imports. */
export type ImportGraph = ReadonlyMap<string, ReadonlySet<string>>;

const STATIC = /^[ \t]*(?:import|export)\s+(?:type\s+)?(?:[\w$]+\s*,\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?|[\w$]+)\s+from\s+['"]([^'"]+)['"]/gm;
const SIDE_EFFECT = /^[ \t]*import\s+['"]([^'"]+)['"]/gm;
const LAZY = /\bimport\(\s*['"]([^'"]+)['"]\s*\)|\bnew URL\(\s*['"]([^'"]+)['"]\s*,\s*import\.meta\.url\s*\)/g;

/** The specifiers one source text imports, in order of appearance per pattern. */
export function importSpecifiers(source: string): string[] {
  const found: string[] = [];
  for (const re of [STATIC, SIDE_EFFECT, LAZY]) for (const m of source.matchAll(re)) found.push((m[1] ?? m[2])!);
  return found;
}

/** Every `.ts` file under `dir` (repo-relative), recursively. */
export function sourceFiles(root: string, dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const path = posix.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(root, path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** The import graph of the `.ts` files under `dir`; edges may lead out of it (to test/, say). */
export function readImportGraph(root: string, dir: string): ImportGraph {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(root, dir)) {
    const targets = new Set<string>();
    for (const spec of importSpecifiers(readFileSync(join(root, file), 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      // NodeNext: sources import `./x.js` and mean `./x.ts`.
      const target = posix.normalize(posix.join(posix.dirname(file), spec)).replace(/\.js$/, '.ts');
      if (!existsSync(join(root, target))) {
        // A file that is no source of ours (the agent bundle a driver starts) is no edge; a `.js` is one, misread.
        if (spec.endsWith('.js')) throw new Error(`${file} imports ${spec}: no ${target}`);
        continue;
      }
      targets.add(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The strongly connected components of more than one node (or a node importing itself): the cycles. */
export function cycles<T>(nodes: Iterable<T>, edges: (node: T) => Iterable<T>): T[][] {
  // Tarjan's algorithm, iterative so a deep graph cannot overflow the stack.
  const index = new Map<T, number>();
  const low = new Map<T, number>();
  const stack: T[] = [];
  const onStack = new Set<T>();
  const found: T[][] = [];
  let next = 0;
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work: Array<{ node: T; out: Iterator<T> }> = [];
    const visit = (node: T) => {
      index.set(node, next);
      low.set(node, next++);
      stack.push(node);
      onStack.add(node);
      work.push({ node, out: edges(node)[Symbol.iterator]() });
    };
    visit(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const step = top.out.next();
      if (!step.done) {
        const to = step.value;
        if (!index.has(to)) visit(to);
        else if (onStack.has(to)) low.set(top.node, Math.min(low.get(top.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) !== index.get(top.node)) continue;
      const component: T[] = [];
      let member: T;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== top.node);
      if (component.length > 1 || [...edges(top.node)].includes(top.node)) found.push(component);
    }
  }
  return found;
}
