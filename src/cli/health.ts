/** `ostia health`: the health manager as its own process, beside `ostia api` and `ostia worker`. */
import type { Config } from '../config.js';
import type { Runtime } from '../runtime.js';
import { ProviderAliases } from '../providers/registry.js';
import { CliError, type Command } from './command.js';
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
  ].join('\n'),
  async run(input) {
    const config = configFromFlags(health, input);
    requirePostgres(config);
    if (!ovnProviderEnabled(config)) requireAmphoraProvider(config, 'health');
    const { serve } = await import('./serve.js');
    return serve(config, { api: false, worker: false, health: true }, input.json);
  },
};

const providerEnabled = (config: Config, canonical: string) => config.api.enabledProviders.some((name) => (ProviderAliases[name] ?? name) === canonical);

/** Health and housekeeping look after amphorae, which only the amphora provider (or an alias) builds. */
export function amphoraProviderEnabled(config: Config): boolean {
  return providerEnabled(config, 'amphora');
}

export function ovnProviderEnabled(config: Config): boolean {
  return providerEnabled(config, 'ovn');
}

/**
 * Member health of OVN load balancers, from the Southbound database OVN's probes write to; the
 * statuses are also written back into the load balancers' rows (`neutron:member_status`), as
 * upstream's agent does, for the tooling that reads them there.
 */
export async function startOvnHealthWatcher(runtime: Runtime): Promise<{ close(): Promise<void> }> {
  const [{ connectSouthbound }, { OvnHealthWatcher }, { syncSettled }] = await Promise.all([
    import('../providers/ovn/connection.js'),
    import('../providers/ovn/health-watcher.js'),
    import('../providers/ovn/state.js'),
  ]);
  const log = runtime.log.child({ role: 'health', provider: 'ovn' });
  const sb = await connectSouthbound(runtime.config.ovn, log);
  const watcher = new OvnHealthWatcher({ db: runtime.db, sb, log });
  watcher.on('applied', (_changes: unknown, loadBalancers: string[]) => {
    if (!loadBalancers.length) return;
    void runtime
      .ovn()
      .then((deps) => syncSettled(runtime.db, deps, loadBalancers))
      .then(({ failed }) => failed.forEach(({ id, error }) => log.warn({ load_balancer_id: id, err: error }, 'could not record member statuses in the northbound rows')))
      .catch((e: unknown) => log.warn({ err: (e as Error).message }, 'could not record member statuses in the northbound rows'));
  });
  try {
    await watcher.start();
  } catch (e) {
    sb.close();
    throw new CliError(`cannot watch OVN member health at ${runtime.config.ovn.sbConnection}: ${(e as Error).message}`, 'Check that the Southbound ovsdb-server runs and ovn.sbConnection points at it.');
  }
  return {
    async close() {
      await watcher.close();
      sb.close();
    },
  };
}

export function requireAmphoraProvider(config: Config, role: string): void {
  if (amphoraProviderEnabled(config)) return;
  throw new CliError(
    `has nothing to look after: the amphora provider is not enabled (api.enabledProviders is ${JSON.stringify(config.api.enabledProviders)})`,
    `Add 'amphora' to api.enabledProviders in the config file; the noop provider needs no 'ostia ${role}'.`,
  );
}

/** Starts the health manager beside a runtime (for `ostia health`, and `ostia up` with the amphora provider). */
export async function startHealthManager(runtime: Runtime): Promise<{ listen: string; close(): Promise<void> }> {
  const { HealthManager } = await import('../health/index.js');
  const { db, config, log, deps } = runtime;
  const manager = new HealthManager({ db, config, jobs: deps.jobs, providers: deps.providers, log: log.child({ role: 'health' }) });
  let bound;
  try {
    bound = await manager.start();
  } catch (e) {
    await manager.close();
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES')
      throw new CliError(`cannot receive heartbeats on ${config.amphora.healthListen}: ${(e as Error).message}`, 'Stop the other health manager, or set amphora.healthListen to a free host:port in the config.');
    throw e;
  }
  return { listen: bound.address.includes(':') ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`, close: () => manager.close() };
}
