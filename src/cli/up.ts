import type { Command } from './command.js';
import { configFromFlags, dataDirOption, listenOptions } from './settings.js';

export const up: Command = {
  name: 'up',
  summary: 'Run everything in one process: the API, the worker and the embedded Keystone, over SQLite in the data directory.',
  options: { ...dataDirOption, ...listenOptions },
  details: [
    'On first start it creates DATA_DIR/token-secret (mode 0600); every start writes DATA_DIR/clouds.yaml',
    'for the URL it listens on, so `openstack --os-cloud ostia loadbalancer list` works at once.',
    'With --json it prints one line once listening: {"url": ..., "clouds_yaml": ..., "pid": ...}.',
  ].join('\n'),
  async run(input) {
    const { serve } = await import('./serve.js');
    return serve(configFromFlags(up, input), { api: true, worker: true }, input.json);
  },
};
