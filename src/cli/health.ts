/** `ostia health`: the health manager as its own process, beside `ostia api` and `ostia worker`. */
import { computeIsNoop, type Config } from '../config.js';
import { CliError, type Command } from './command.js';
import { ovnProviderEnabled } from '../providers/background-roles.js';
import { requireAmphoraProvider } from './roles.js';
import { configFromFlags, databaseOption, dataDirOption, requirePostgres } from './settings.js';

export const health: Command = {
  name: 'health',
  summary: 'Receive amphora heartbeats and OVN member health, derive operating status and statistics, and fail over silent amphorae.',
  options: { ...dataDirOption, ...databaseOption },
  details: [
    'Amphorae send their heartbeats to amphora.healthListen (UDP); run one health process per such address.',
    'Several may run against one database: each failover is claimed by locking its load balancer.',
    'With the ovn provider enabled it also watches OVN\'s Southbound Service_Monitor rows (ovn.sbConnection) for member health.',
    "'ostia up' runs the health manager itself when the amphora or ovn provider is enabled.",
    'Under compute.driver noop no amphora runs, so there are no heartbeats to receive and no amphora health manager.',
  ].join('\n'),
  async run(input) {
    const config = configFromFlags(health, input);
    requirePostgres(config);
    if (!ovnProviderEnabled(config)) requireRunningAmphorae(config);
    const { serve } = await import('./serve.js');
    return serve(config, { api: false, worker: false, health: true }, input.json);
  },
};

function requireRunningAmphorae(config: Config): void {
  requireAmphoraProvider(config, 'health');
  if (computeIsNoop(config))
    throw new CliError(
      'has nothing to watch: compute.driver is noop, so no amphora runs or sends heartbeats',
      "Set compute.driver to local for amphorae that run; under compute.driver noop no 'ostia health' is needed.",
    );
}

