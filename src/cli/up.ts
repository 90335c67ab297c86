import type { Command } from './command.js';
import { configFromFlags, dataDirOption, listenOptions } from './settings.js';
import { amphoraProviderEnabled, ovnProviderEnabled } from './health.js';

export const up: Command = {
  name: 'up',
  summary: 'Run everything in one process: the API, the worker and the embedded Keystone, over SQLite in the data directory.',
  options: { ...dataDirOption, ...listenOptions },
  details: [
    'On first start it creates DATA_DIR/token-secret (mode 0600); every start writes DATA_DIR/clouds.yaml',
    'for the URL it listens on, so `openstack --os-cloud ostia loadbalancer list` works at once.',
    'With --json it prints one line once listening: {"url": ..., "clouds_yaml": ..., "pid": ...}.',
    'With the amphora provider enabled it also runs the health manager and housekeeping (see their --help);',
    'with the ovn provider enabled, the watcher of OVN member health (Southbound Service_Monitor).',
  ].join('\n'),
  async run(input) {
    const { serve } = await import('./serve.js');
    const config = configFromFlags(up, input);
    const amphorae = amphoraProviderEnabled(config);
    return serve(config, { api: true, worker: true, health: amphorae || ovnProviderEnabled(config), housekeeping: amphorae }, input.json);
  },
};
