/** `ostia housekeeping`: reaps orphaned amphorae and ports, removes old rows, rotates agent certificates. */
import type { Command } from './command.js';
import { requireAmphoraProvider } from './roles.js';
import { configFromFlags, databaseOption, dataDirOption, requirePostgres } from './settings.js';

export const housekeeping: Command = {
  name: 'housekeeping',
  summary: 'Reap orphaned amphorae and management ports, purge deleted amphora rows and rotate agent certificates.',
  options: { ...dataDirOption, ...databaseOption },
  details: [
    'It reads the CA and the amphorae where the controllers keep them (DATA_DIR/pki, DATA_DIR/amphorae): run it on a',
    "controller's machine. Several may run; each action is idempotent or claimed in the database.",
    "'ostia up' runs housekeeping itself when the amphora provider is enabled.",
  ].join('\n'),
  async run(input) {
    const config = configFromFlags(housekeeping, input);
    requirePostgres(config);
    requireAmphoraProvider(config, 'housekeeping');
    const { serve } = await import('./serve.js');
    return serve(config, { api: false, worker: false, housekeeping: true }, input.json);
  },
};
