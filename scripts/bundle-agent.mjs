// Part of `npm run build`: bundles the compiled amphora agent (dist/src/cli/agent-main.js) into
// dist/ostia-agent.mjs, the one file the local compute driver runs per amphora.
import { build } from 'esbuild';

await build({
  entryPoints: ['dist/src/cli/agent-main.js'],
  outfile: 'dist/ostia-agent.mjs',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  // Some bundled CommonJS packages call require() for Node's built-ins.
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  logLevel: 'warning',
});
