// Part of `npm run build`: bundles the compiled amphora agent (dist/src/cli/agent-main.js) into
// dist/ostia-agent.mjs, the one file the local compute driver runs per amphora.
// A running `ostia up` starts agents from that file at any time, so a build (say `npm test` beside
// `npm run up`) replaces it only when it changed, and by a rename: never a half-written file.
import { build } from 'esbuild';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const outfile = 'dist/ostia-agent.mjs';
const result = await build({
  entryPoints: ['dist/src/cli/agent-main.js'],
  outfile,
  write: false,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  // Some bundled CommonJS packages call require() for Node's built-ins.
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  logLevel: 'warning',
});
const bundle = result.outputFiles.find((f) => f.path.endsWith('ostia-agent.mjs')).contents;
if (!existsSync(outfile) || !Buffer.from(bundle).equals(readFileSync(outfile))) {
  writeFileSync(`${outfile}.tmp`, bundle);
  renameSync(`${outfile}.tmp`, outfile);
}
