/** `ostia health`: the health manager as its own process, beside `ostia api` and `ostia worker`. */
import { computeIsNoop, type Config } from '../config.js';
import type { Runtime } from '../runtime.js';
import { providerEnabled } from '../providers/registry.js';
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

/** Health and housekeeping look after amphorae, which only the amphora provider (or an alias) builds. */
export function amphoraProviderEnabled(config: Config): boolean {
  return providerEnabled(config.api.enabledProviders, 'amphora');
}

/** Amphorae that run (not under compute.driver noop): only they need HAProxy and send heartbeats to watch. */
export function amphoraeRun(config: Config): boolean {
  return amphoraProviderEnabled(config) && !computeIsNoop(config);
}

export function ovnProviderEnabled(config: Config): boolean {
  return providerEnabled(config.api.enabledProviders, 'ovn');
}

/** Member health of OVN load balancers, from the Southbound database OVN's probes write to (providers/ovn/health-role.ts). */
export async function startOvnHealthWatcher(runtime: Runtime): Promise<{ close(): Promise<void> }> {
  const { startOvnHealth } = await import('../providers/ovn/health-role.js');
  try {
    return await startOvnHealth(runtime.db, runtime.config, runtime.ovn, runtime.log.child({ role: 'health', provider: 'ovn' }));
  } catch (e) {
    throw new CliError(`cannot watch OVN member health at ${runtime.config.ovn.sbConnection}: ${(e as Error).message}`, 'Check that the Southbound ovsdb-server runs and ovn.sbConnection points at it.');
  }
}

export function requireAmphoraProvider(config: Config, role: string): void {
  if (amphoraProviderEnabled(config)) return;
  throw new CliError(
    `has nothing to look after: the amphora provider is not enabled (api.enabledProviders is ${JSON.stringify(config.api.enabledProviders)})`,
    `Add 'amphora' to api.enabledProviders in the config file; the noop provider needs no 'ostia ${role}'.`,
  );
}

function requireRunningAmphorae(config: Config): void {
  requireAmphoraProvider(config, 'health');
  if (computeIsNoop(config))
    throw new CliError(
      'has nothing to watch: compute.driver is noop, so no amphora runs or sends heartbeats',
      "Set compute.driver to local for amphorae that run; under compute.driver noop no 'ostia health' is needed.",
    );
}

/** Starts the health manager beside a runtime (for `ostia health`, and `ostia up` with amphorae that run). */
export async function startHealthManager(runtime: Runtime): Promise<{ listen: string; close(): Promise<void> }> {
  const { HealthManager } = await import('../health/index.js');
  const { db, config, log, deps } = runtime;
  const manager = new HealthManager({ db, config, jobs: deps.jobs, providers: deps.providers, log: log.child({ role: 'health' }), metrics: deps.metrics });
  let bound;
  try {
    bound = await manager.start();
  } catch (e) {
    await manager.close();
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES')
      throw new CliError(`cannot receive heartbeats on ${config.amphora.healthListen}: ${(e as Error).message}`, 'Stop the other health manager (another Ostia on this data directory, if its address is in DATA_DIR/address-block), or set amphora.healthListen to a free host:port in the config.');
    throw e;
  }
  return { listen: bound.address.includes(':') ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`, close: () => manager.close() };
}
