/** One GET over TLS on a connection of its own, not verifying the server (the baseline's own self-signed listener); status 0 on failure. */
import { request } from 'node:https';

export function https(host: string, port: number, timeoutMs = 1000): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host, port, path: '/', agent: false, rejectUnauthorized: false, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(0));
    req.end();
  });
}
