/**
 * The TLS files a configuration needs, named by slot: the same listener's first certificate is
 * always `<listener>.crt0.pem`, whatever certificate fills it. So a renewal writes the same file
 * name with new content, which HAProxy's runtime API can swap in place (`set ssl cert <file>`),
 * while a change of slots (another SNI certificate, a CA where there was none) changes the
 * rendered file and takes a reload. The renderer names files with this module and the agent
 * writes them with it: the two cannot disagree.
 */
import type { AmphoraConfig } from '../../domain/amphora-config.js';

/** How HAProxy's runtime API updates a file in place: `set ssl <kind> <file>` then `commit ssl <kind> <file>`. */
export type TlsFileKind = 'cert' | 'ca-file' | 'crl-file';

export interface TlsFile {
  /** File name inside the amphora's TLS directory. */
  readonly name: string;
  readonly kind: TlsFileKind;
  readonly pem: string;
  /** Only frontend material is swapped at runtime; members' material changes by reload. */
  readonly side: 'frontend' | 'backend';
}

export const listenerCertificateFile = (listenerId: string, slot: number) => `${listenerId}.crt${slot}.pem`;
export const listenerClientCaFile = (listenerId: string) => `${listenerId}.client-ca.pem`;
export const listenerClientCrlFile = (listenerId: string) => `${listenerId}.client-crl.pem`;
export const poolCertificateFile = (poolId: string) => `${poolId}.member-crt.pem`;
export const poolCaFile = (poolId: string) => `${poolId}.member-ca.pem`;
export const poolCrlFile = (poolId: string) => `${poolId}.member-crl.pem`;

/** Every TLS file of `config`, listeners first, in config order. */
export function tlsFiles(config: AmphoraConfig): TlsFile[] {
  const files: TlsFile[] = [];
  const add = (name: string, kind: TlsFileKind, pem: string | null, side: TlsFile['side']) => {
    if (pem !== null) files.push({ name, kind, pem, side });
  };
  for (const { id, tls } of config.listeners) {
    if (!tls) continue;
    tls.certificates.forEach((pem, slot) => add(listenerCertificateFile(id, slot), 'cert', pem, 'frontend'));
    add(listenerClientCaFile(id), 'ca-file', tls.clientCa, 'frontend');
    add(listenerClientCrlFile(id), 'crl-file', tls.clientCrl, 'frontend');
  }
  for (const { id, tls } of config.pools) {
    if (!tls) continue;
    add(poolCertificateFile(id), 'cert', tls.certificate, 'backend');
    add(poolCaFile(id), 'ca-file', tls.ca, 'backend');
    add(poolCrlFile(id), 'crl-file', tls.crl, 'backend');
  }
  return files;
}
