/**
 * Child process for the data-plane bench when nginx is missing: serves HTTP backends with
 * test/support/amphora-fixtures.ts's `startBackend`, one per (name, address) of argv[2] (JSON), prints
 * the ports as one JSON line, and runs until it is signalled. Several of these, one process
 * each, keep the backends off the bench's own event loop.
 */
import { startBackend, type Backend } from '../../test/support/amphora-fixtures.js';

const wanted = JSON.parse(process.argv[2] ?? '[]') as Array<{ name: string; address: string }>;
const started: Backend[] = [];
for (const { name, address } of wanted) started.push(await startBackend(name, address));
process.stdout.write(JSON.stringify(started.map(({ name, address, port }) => ({ name, address, port }))) + '\n');
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    void Promise.all(started.map((b) => b.close())).then(() => process.exit(0));
  });
}
