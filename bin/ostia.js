#!/usr/bin/env node
// The compiled CLI lives in dist/; say how to build it rather than print a module-resolution trace.
import { existsSync } from 'node:fs';

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write("ostia: not built yet (no dist/src/cli/main.js). Run 'npm run build' in the Ostia checkout, or start it with 'npm run up'.\n");
  process.exit(1);
}
await import(main.href);
