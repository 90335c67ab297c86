/**
 * Which certificate a TLS endpoint serves, as a client sees it. The handshake may fail after
 * the server's certificate arrived (a listener that demands client certificates refuses us
 * under TLS 1.2); the certificate is read all the same, since that is all a probe wants.
 */
import { connect } from 'node:tls';

/** The SHA-256 fingerprint of the certificate served at address:port for `serverName` (null: no SNI). */
export function servedFingerprint(address: string, port: number, serverName: string | null, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const socket = connect({ host: address, port, servername: serverName ?? undefined, rejectUnauthorized: false });
    const abort = () => socket.destroy(signal.reason instanceof Error ? signal.reason : new Error('probe aborted'));
    signal.addEventListener('abort', abort, { once: true });
    socket.once('close', () => signal.removeEventListener('abort', abort));
    const peer = () => {
      try {
        return socket.getPeerCertificate()?.fingerprint256 ?? null;
      } catch {
        return null;
      }
    };
    socket.once('secureConnect', () => {
      const fingerprint = peer();
      socket.destroy();
      if (fingerprint) resolve(fingerprint);
      else reject(new Error(`${address}:${port} served no certificate`));
    });
    socket.once('error', (err) => {
      const fingerprint = peer();
      socket.destroy();
      if (fingerprint) resolve(fingerprint);
      else reject(err);
    });
  });
}
