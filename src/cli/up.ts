import type { Command } from './command.js';
import { configFromFlags, dataDirOption, listenOptions } from './settings.js';
import { amphoraeRun, amphoraProviderEnabled, ovnProviderEnabled } from '../providers/background-roles.js';

export const up: Command = {
  name: 'up',
  summary: 'Run everything in one process: the API, the worker and the embedded Keystone, over SQLite in the data directory.',
  options: { ...dataDirOption, ...listenOptions },
  details: [
    'On first start it creates DATA_DIR/token-secret (mode 0600); every start writes DATA_DIR/clouds.yaml',
    'for the URL it listens on, so `openstack --os-cloud ostia loadbalancer list` works at once (not under',
    'identity.mode external, whose clouds log in at that Keystone, nor testing, whose callers send X-Project-Id and X-Roles).',
    'With --json it prints one line once listening: {"url": ..., "clouds_yaml": ..., "pid": ...}.',
    'With the amphora provider enabled it also runs housekeeping, and the health manager unless compute.driver',
    'is noop (no amphora runs, so none sends heartbeats); see their --help;',
    'with the ovn provider enabled, the watcher of OVN member health (Southbound Service_Monitor).',
    'Several can run side by side with their own --data-dir (and --port 0): the first start of a data',
    'directory takes a block of loopback addresses no other is bound in (VIPs in 127.16.0.0/16, amphora',
    'management addresses and the heartbeat receiver in 127.80.0.0/16), kept in DATA_DIR/address-block;',
    "'ostia config --data-dir DIR' shows them. Settings the config file changes are the config's.",
  ].join('\n'),
  async run(input) {
    const { serve } = await import('./serve.js');
    const config = configFromFlags(up, input);
    const amphorae = amphoraProviderEnabled(config);
    return serve(config, { api: true, worker: true, health: amphoraeRun(config) || ovnProviderEnabled(config), housekeeping: amphorae, addressBlock: amphorae }, input.json);
  },
};

