/**
 * A provider's capabilities as one table: per feature, every value the API accepts and those the
 * provider builds; any other value is refused with Octavia's 501 and the provider's own words (an
 * unsupported option is `… does not support a requested option: <text>`, an action the provider
 * does not implement `… does not support a requested action: <text>`). Every provider folder has
 * one: it drives the provider's synchronous checks, and tells a conformance suite what to skip
 * for that provider, and why.
 */
import { apiError, type ApiError } from '../domain/errors.js';

export type Refusal = { readonly kind: 'option' | 'action'; readonly text: string };

export const option = (text: string): Refusal => ({ kind: 'option', text });
export const action = (text: string): Refusal => ({ kind: 'action', text });

/** A feature with the values the provider takes; any other value is refused with `refusal(value)`. */
export interface CapabilityRow {
  readonly feature: string;
  readonly supported: readonly string[];
  /** Every value the API accepts, so the unsupported ones can be listed. */
  readonly values: readonly string[];
  readonly refusal: (value: string) => Refusal;
}

/** A (feature, value) the provider refuses, with the text and kind of its 501. */
export interface Unsupported {
  readonly feature: string;
  readonly value: string;
  readonly reason: string;
  readonly kind: Refusal['kind'];
}

export interface CapabilityTable {
  readonly provider: string;
  readonly rows: readonly CapabilityRow[];
  /** Throws the provider's 501 when it does not take `value` for `feature`. */
  requireSupported(feature: string, value: string): void;
  /** Every (feature, value) the provider refuses, with the text it refuses it with: what a conformance suite skips, and why. */
  unsupported(): Unsupported[];
}

function refusalError(provider: string, r: Refusal): ApiError {
  return apiError(r.kind === 'option' ? 'PROVIDER_UNSUPPORTED_OPTION' : 'PROVIDER_NOT_IMPLEMENTED', provider, r.text);
}

export function capabilityTable(provider: string, rows: readonly CapabilityRow[]): CapabilityTable {
  const byFeature = new Map(rows.map((c) => [c.feature, c]));
  return {
    provider,
    rows,
    requireSupported(feature, value) {
      const capability = byFeature.get(feature);
      if (!capability) throw new Error(`no ${provider.toUpperCase()} capability ${feature}`);
      if (!capability.supported.includes(value)) throw refusalError(provider, capability.refusal(value));
    },
    unsupported: () =>
      rows.flatMap((c) =>
        c.values.filter((v) => !c.supported.includes(v)).map((value) => {
          const { kind, text } = c.refusal(value);
          return { feature: c.feature, value, reason: text, kind };
        }),
      ),
  };
}
