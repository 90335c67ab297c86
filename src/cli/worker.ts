import type { Command } from './command.js';
import { configFromFlags, databaseOption, dataDirOption, requirePostgres } from './settings.js';

export const worker: Command = {
  name: 'worker',
  summary: 'Run provisioning jobs from the PostgreSQL queue, beside one or more `ostia api` processes.',
  options: { ...dataDirOption, ...databaseOption },
  details: 'Workers coordinate only through the database: start as many as you like; a job of a worker that dies is resumed by another.',
  async run(input) {
    const config = configFromFlags(worker, input);
    requirePostgres(config);
    const { serve } = await import('./serve.js');
    return serve(config, { api: false, worker: true }, input.json);
  },
};
