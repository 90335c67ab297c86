/**
 * The roles a serving process runs besides the API and the worker (the health manager, OVN member
 * health, housekeeping): which the config calls for, and starting each beside a runtime. The
 * commands (`ostia up`, `health`, `housekeeping`) and `serve` share them, so none imports another command.
 */
import { computeIsNoop, type Config } from '../config.js';
import { providerEnabled } from '../providers/registry.js';
import type { Runtime } from '../runtime.js';
import { CliError } from './command.js';

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

/** Starts housekeeping beside a runtime (for `ostia housekeeping`, and `ostia up` with the amphora provider). */
export async function startHousekeeping(runtime: Runtime): Promise<{ close(): Promise<void> }> {
  const { openHousekeeper } = await import('../housekeeping/index.js');
  const keeper = openHousekeeper(runtime.db, runtime.config, runtime.log.child({ role: 'housekeeping' }), await runtime.amphora());
  keeper.start();
  return { close: () => keeper.close() };
}
