/**
 * What a TERMINATED_HTTPS listener must serve once its certificates are pushed, as probes the
 * controller makes at the VIP: a client that sends no server name gets the default (first)
 * certificate; a client naming a host gets a certificate made for that host. A name several
 * certificates claim may be answered by any of them (HAProxy prefers ECDSA for clients that
 * support it). A renewal — the same number of certificates, some replaced — must also keep
 * every name the replaced certificate answered: a new certificate that drops one would break
 * the clients using it, so it counts as wrong.
 */
import { X509Certificate } from 'node:crypto';
import type { TlsBundle } from '../../keymanager/certificates.js';

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

/** A name to send for `dnsName`: a wildcard is probed with a host it covers. */
function probeName(dnsName: string): string {
  return dnsName.startsWith('*.') ? `ostia-probe.${dnsName.slice(2)}` : dnsName;
}

function covers(bundle: TlsBundle, host: string): boolean {
  return new X509Certificate(bundle.certificatePem).checkHost(host) !== undefined;
}

/**
 * The probes for `served` (HAProxy's order, the default first). `previous` is what the
 * listener served before this change, when the change replaced certificates in place.
 */
export function probesFor(served: readonly Served[], previous: readonly Served[] | null): Probe[] {
  const first = served[0];
  if (!first) return [];
  const describe = (s: Served) => `${s.ref} (${s.bundle.subjectCn ?? s.bundle.dnsNames[0] ?? 'no name'})`;
  const probes: Probe[] = [{ serverName: null, accept: [first.bundle.fingerprintSha256], expected: `the default certificate ${describe(first)}` }];
  const hosts = new Set(served.flatMap((s) => s.bundle.dnsNames.map(probeName)));
  if (previous && previous.length === served.length) {
    previous.forEach((old, slot) => {
      if (old.ref !== served[slot]!.ref) for (const name of old.bundle.dnsNames) hosts.add(probeName(name));
    });
  }
  for (const host of hosts) {
    const claimants = served.filter((s) => covers(s.bundle, host));
    probes.push({
      serverName: host,
      accept: claimants.map((s) => s.bundle.fingerprintSha256),
      expected: claimants.length ? `a certificate for ${host}: ${claimants.map(describe).join(' or ')}` : `a certificate for ${host}, which the replaced certificate served and no new one covers`,
    });
  }
  return probes;
}
