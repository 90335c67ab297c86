/** Opening the OVN databases named in config: one client per database, with its TLS files read once. */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { OvsdbClient, type OvsdbClientOptions } from './ovsdb/index.js';

/** Where the databases are and how to reach them: config's `ovn` section has these. */
export interface OvnConnectionSettings {
  nbConnection: string;
  sbConnection: string;
  sslPrivateKey: string;
  sslCertificate: string;
  sslCaCertificate: string;
  probeIntervalMs: number;
}

export const NB_DB = 'OVN_Northbound';
export const SB_DB = 'OVN_Southbound';

function clientOptions(ovn: OvnConnectionSettings, logger: Logger | undefined, extra: Partial<OvsdbClientOptions>): Partial<OvsdbClientOptions> {
  const tls = ovn.sslPrivateKey ? { key: readFileSync(ovn.sslPrivateKey), cert: readFileSync(ovn.sslCertificate), ca: readFileSync(ovn.sslCaCertificate) } : undefined;
  return { probeIntervalMs: ovn.probeIntervalMs, logger, ...(tls && { tls }), ...extra };
}

export function connectNorthbound(ovn: OvnConnectionSettings, logger?: Logger, extra: Partial<OvsdbClientOptions> = {}): Promise<OvsdbClient> {
  return OvsdbClient.connect(ovn.nbConnection, clientOptions(ovn, logger?.child({ db: NB_DB }), extra));
}

export function connectSouthbound(ovn: OvnConnectionSettings, logger?: Logger, extra: Partial<OvsdbClientOptions> = {}): Promise<OvsdbClient> {
  return OvsdbClient.connect(ovn.sbConnection, clientOptions(ovn, logger?.child({ db: SB_DB }), extra));
}
