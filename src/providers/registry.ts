/** Which providers this deployment enables, under which names (Octavia's aliases included). */
import { apiError } from '../domain/errors.js';
import type { ProviderDriver } from '../provider-contract/provider.js';
import { noopDriver } from './noop/driver.js';

/**
 * The providers that need nothing but the database, by canonical name. `amphora` needs the
 * machinery of the process (CA, compute, network), so the runtime supplies it as `extra`; the
 * runtime also makes each provider with its key manager's certificate bookkeeping (a registry
 * made without, as tests of the job runner make it, keeps no such books).
 */
const builtins: Record<string, () => ProviderDriver> = {
  noop: noopDriver,
};

/** Names clients send that mean another provider (Octavia's entry points do the same). */
export const ProviderAliases: Readonly<Record<string, string>> = { octavia: 'amphora', amphorav2: 'amphora' };

/** Whether provider `canonical` is among `enabled`, under its name or an alias. */
export function providerEnabled(enabled: readonly string[], canonical: string): boolean {
  return enabled.some((name) => (ProviderAliases[name] ?? name) === canonical);
}

export class ProviderRegistry {
  private readonly drivers = new Map<string, ProviderDriver>();

  constructor(
    enabled: readonly string[],
    readonly defaultProvider: string,
    extra: Record<string, () => ProviderDriver> = {},
  ) {
    const all = { ...builtins, ...extra };
    // An alias shares its provider's driver: one CA, one compute driver, whatever name was asked for.
    const made = new Map<string, ProviderDriver>();
    for (const name of enabled) {
      const canonical = ProviderAliases[name] ?? name;
      const make = all[canonical];
      if (!make) throw new Error(`provider '${name}' is enabled in config but Ostia has no such provider (known: ${Object.keys(all).join(', ')})`);
      if (!made.has(canonical)) made.set(canonical, make());
      this.drivers.set(name, made.get(canonical)!);
    }
  }

  /** The names the API lists, as `enabled_provider_drivers` would (Octavia's default calls `octavia` a deprecated alias). */
  list(): Array<{ name: string; description: string }> {
    return [...this.drivers.entries()].map(([name, d]) => ({
      name,
      description: ProviderAliases[name] ? `Deprecated alias of ${d.description.replace(/^The /, 'the ')}` : d.description,
    }));
  }

  /** Resolves a requested provider name (or the default) to its driver, or 400 like Octavia. */
  get(name: string | null | undefined): ProviderDriver {
    const driver = this.drivers.get(name ?? this.defaultProvider);
    if (!driver) throw apiError('PROVIDER_NOT_ENABLED', name ?? this.defaultProvider);
    return driver;
  }

  /** The driver of a stored load balancer (its provider was validated on create). */
  forLoadBalancer(provider: string): ProviderDriver {
    const driver = this.drivers.get(provider) ?? this.drivers.get(ProviderAliases[provider] ?? '');
    if (!driver) throw apiError('PROVIDER_NOT_FOUND', provider);
    return driver;
  }
}
