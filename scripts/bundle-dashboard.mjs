// Part of `npm run build`: type-checks the dashboard (dashboard/), bundles it with esbuild into
// dist/dashboard/assets/<name>-<content hash>.{js,css} and writes dist/dashboard/index.html naming
// them. A running API serves the new files at once: index.html is replaced by a rename, and the
// assets of older builds are removed only after it.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';

const check = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'dashboard/tsconfig.json'], { stdio: 'inherit' });
if (check.status !== 0) process.exit(check.status ?? 1);

/**
 * The page imports the domain's enums, schemas and RBAC rules rather than copies of them. The
 * schemas' validators use node:net's isIP, which the page never calls (the API validates): it
 * gets a module that says so if it ever did.
 */
const nodeNetForTheBrowser = {
  name: 'node-net-for-the-browser',
  setup(b) {
    b.onResolve({ filter: /^node:net$/ }, () => ({ path: 'node:net', namespace: 'browser-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'browser-stub' }, () => ({
      contents: "export function isIP() { throw new Error('address validation runs in the API, not in the dashboard'); }",
      loader: 'js',
    }));
  },
};

const out = 'dist/dashboard';
const assets = `${out}/assets`;
mkdirSync(assets, { recursive: true });
const result = await build({
  entryPoints: ['dashboard/src/main.tsx'],
  outdir: assets,
  entryNames: '[name]-[hash]',
  bundle: true,
  minify: true,
  sourcemap: false,
  format: 'esm',
  target: 'es2020',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  metafile: true,
  legalComments: 'none',
  plugins: [nodeNetForTheBrowser],
  logLevel: 'warning',
});
const files = Object.keys(result.metafile.outputs).map((f) => basename(f));
const script = files.find((f) => f.endsWith('.js'));
const style = files.find((f) => f.endsWith('.css'));
const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Ostia</title>
<link rel="icon" href="data:,">
${style ? `<link rel="stylesheet" href="/dashboard/assets/${style}">` : ''}
<script type="module" src="/dashboard/assets/${script}"></script>
</head>
<body><div id="app"></div></body>
</html>
`;
writeFileSync(`${out}/index.html.tmp`, page);
renameSync(`${out}/index.html.tmp`, `${out}/index.html`);
for (const f of readdirSync(assets)) if (!files.includes(f)) rmSync(`${assets}/${f}`);
