/** Opening the OVN databases named in config: one client per database, with its TLS files read once. */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { OvsdbClient, type OvsdbClientOptions } from '../../ovn/ovsdb/index.js';

export const NB_DB = 'OVN_Northbound';
export const SB_DB = 'OVN_Southbound';

function clientOptions(ovn: Config['ovn'], logger: Logger | undefined, extra: Partial<OvsdbClientOptions>): Partial<OvsdbClientOptions> {
  const tls = ovn.sslPrivateKey ? { key: readFileSync(ovn.sslPrivateKey), cert: readFileSync(ovn.sslCertificate), ca: readFileSync(ovn.sslCaCertificate) } : undefined;
  return { probeIntervalMs: ovn.probeIntervalMs, logger, ...(tls && { tls }), ...extra };
}

export function connectNorthbound(ovn: Config['ovn'], logger?: Logger, extra: Partial<OvsdbClientOptions> = {}): Promise<OvsdbClient> {
  return OvsdbClient.connect(ovn.nbConnection, clientOptions(ovn, logger?.child({ db: NB_DB }), extra));
}

export function connectSouthbound(ovn: Config['ovn'], logger?: Logger, extra: Partial<OvsdbClientOptions> = {}): Promise<OvsdbClient> {
  return OvsdbClient.connect(ovn.sbConnection, clientOptions(ovn, logger?.child({ db: SB_DB }), extra));
}
