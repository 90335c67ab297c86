import type { Command } from './command.js';
import { configFromFlags, databaseOption, dataDirOption, listenOptions, requirePostgres } from './settings.js';

export const api: Command = {
  name: 'api',
  summary: 'Serve the Octavia API and the embedded Keystone, without running jobs: run `ostia worker` beside it, over PostgreSQL.',
  options: { ...dataDirOption, ...listenOptions, ...databaseOption },
  details: [
    'Every api process of a deployment must sign tokens with the same secret: set identity.tokenSecret',
    'in the config file, or share DATA_DIR/token-secret. With --json it prints the same line as `ostia up`.',
  ].join('\n'),
  async run(input) {
    const config = configFromFlags(api, input);
    requirePostgres(config);
    const { serve } = await import('./serve.js');
    return serve(config, { api: true, worker: false }, input.json);
  },
};
