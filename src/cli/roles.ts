/**
 * What the commands that run background roles (`ostia up`, `health`, `housekeeping`) check of the
 * config before starting, and a role that would not start said with what to fix. runtime.ts
 * starts the roles; the commands and `serve` share this, so none imports another command.
 */
import type { Config } from '../config.js';
import { amphoraProviderEnabled, RoleStartError } from '../providers/background-roles.js';
import { CliError } from './command.js';

export function requireAmphoraProvider(config: Config, role: string): void {
  if (amphoraProviderEnabled(config)) return;
  throw new CliError(
    `has nothing to look after: the amphora provider is not enabled (api.enabledProviders is ${JSON.stringify(config.api.enabledProviders)})`,
    `Add 'amphora' to api.enabledProviders in the config file; the noop provider needs no 'ostia ${role}'.`,
  );
}

const UNBINDABLE = ['EADDRINUSE', 'EADDRNOTAVAIL', 'EACCES'];

/** A role's failure to start as the command reports it: with the hint where there is one, else as it was thrown. */
export function roleStartFailure(e: unknown, config: Config): unknown {
  if (!(e instanceof RoleStartError)) return e;
  const cause = e.cause as NodeJS.ErrnoException;
  if (e.role === 'amphora health' && UNBINDABLE.includes(cause.code ?? ''))
    return new CliError(`cannot receive heartbeats on ${config.amphora.healthListen}: ${cause.message}`, 'Stop the other health manager (another Ostia on this data directory, if its address is in DATA_DIR/address-block), or set amphora.healthListen to a free host:port in the config.');
  if (e.role === 'ovn health')
    return new CliError(`cannot watch OVN member health at ${config.ovn.sbConnection}: ${cause.message}`, 'Check that the Southbound ovsdb-server runs and ovn.sbConnection points at it.');
  return cause;
}
