/** `ostia health`: the health manager as its own process, beside `ostia api` and `ostia worker`. */
import type { Config } from '../config.js';
import type { Runtime } from '../runtime.js';
import { ProviderAliases } from '../providers/registry.js';
import { CliError, type Command } from './command.js';
import { configFromFlags, databaseOption, dataDirOption, requirePostgres } from './settings.js';

export const health: Command = {
  name: 'health',
  summary: 'Receive amphora heartbeats, derive operating status and statistics, and fail over silent amphorae.',
  options: { ...dataDirOption, ...databaseOption },
  details: [
    'Amphorae send their heartbeats to amphora.healthListen (UDP); run one health process per such address.',
    'Several may run against one database: each failover is claimed by locking its load balancer.',
    "'ostia up' runs the health manager itself when the amphora provider is enabled.",
  ].join('\n'),
  async run(input) {
    const config = configFromFlags(health, input);
    requirePostgres(config);
    requireAmphoraProvider(config, 'health');
    const { serve } = await import('./serve.js');
    return serve(config, { api: false, worker: false, health: true }, input.json);
  },
};

/** Health and housekeeping look after amphorae, which only the amphora provider (or an alias) builds. */
export function amphoraProviderEnabled(config: Config): boolean {
  return config.api.enabledProviders.some((name) => (ProviderAliases[name] ?? name) === 'amphora');
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
