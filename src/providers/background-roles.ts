/**
 * Which background roles a configuration runs beside the API and the worker, and the error when one
 * does not start: what the commands decide before they load the runtime (src/runtime.ts), which
 * brings every provider and the API with it.
 */
import { computeIsNoop, type Config } from '../config.js';
import { providerEnabled } from './registry.js';

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

export type BackgroundRole = 'amphora health' | 'ovn health' | 'amphora housekeeping';

/** A background role that did not start, named so that the command can say what to fix. */
export class RoleStartError extends Error {
  constructor(
    readonly role: BackgroundRole,
    cause: unknown,
  ) {
    super(`${role}: ${(cause as Error).message}`, { cause });
  }
}
