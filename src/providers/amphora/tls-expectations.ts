/**
 * What a TERMINATED_HTTPS listener must serve once its certificates are pushed, as probes the
 * controller makes at the VIP. HAProxy (without strict-sni) answers a client that sends no
 * server name, or a name no certificate covers, with the default (first) certificate, and a
 * client naming a host with a certificate made for that host; a name several certificates claim
 * may be answered by any of them (HAProxy prefers ECDSA for clients that support it).
 *
 * So the probes check that the VIP serves exactly the certificates now referenced, whatever
 * names they have: a certificate may be replaced by one for other names, as in Octavia. A name
 * only the replaced certificates had is now one no certificate covers: it must get the default,
 * which shows the old certificate is gone.
 */
import { X509Certificate } from 'node:crypto';
import type { TlsBundle } from '../../tls/certificates.js';

export interface Probe {
  /** Sent as SNI; null sends none. */
  readonly serverName: string | null;
  /** Fingerprints (SHA-256, colon-separated hex) any of which is right. */
  readonly accept: readonly string[];
  /** Says which certificate the probe expects, for the reason a mismatch gives. */
  readonly expected: string;
}

/** A certificate as the probes need it. */
export interface Served {
  readonly ref: string;
  readonly bundle: TlsBundle;
}

/** A server name no certificate is expected to cover (RFC 2606 reserves `.invalid`). */
export const UNCOVERED_PROBE_NAME = 'ostia-probe.invalid';

/** A name to send for `dnsName`: a wildcard is probed with a host it covers. */
function probeName(dnsName: string): string {
  return dnsName.startsWith('*.') ? `ostia-probe.${dnsName.slice(2)}` : dnsName;
}

function covers(bundle: TlsBundle, host: string): boolean {
  return new X509Certificate(bundle.certificatePem).checkHost(host) !== undefined;
}

const describe = (s: Served) => `${s.ref} (${s.bundle.subjectCn ?? s.bundle.dnsNames[0] ?? 'no name'})`;

/**
 * The probes for `served` (HAProxy's order, the default first). `previous` is what the listener
 * served before this change, if it changed: its names are probed too, so a certificate that was
 * replaced or removed but still answers for its names is seen.
 */
export function probesFor(served: readonly Served[], previous: readonly Served[] | null): Probe[] {
  const first = served[0];
  if (!first) return [];
  const byDefault = (why: string): Probe['expected'] => `the default certificate ${describe(first)}${why}`;
  const probes: Probe[] = [{ serverName: null, accept: [first.bundle.fingerprintSha256], expected: byDefault('') }];
  const hosts = new Set([...served, ...(previous ?? [])].flatMap((s) => s.bundle.dnsNames.map(probeName)));
  hosts.add(UNCOVERED_PROBE_NAME);
  for (const host of hosts) {
    const claimants = served.filter((s) => covers(s.bundle, host));
    probes.push(
      claimants.length
        ? { serverName: host, accept: claimants.map((s) => s.bundle.fingerprintSha256), expected: `a certificate for ${host}: ${claimants.map(describe).join(' or ')}` }
        : { serverName: host, accept: [first.bundle.fingerprintSha256], expected: byDefault(`, as no certificate covers ${host}`) },
    );
  }
  return probes;
}
