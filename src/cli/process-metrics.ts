/**
 * The metrics of a process that serves no API (`ostia health` run apart): its own registry at
 * `GET /metrics` on `amphora.healthMetricsListen`. Without a token check, as node exporters
 * serve theirs: the counters name amphora ids and nothing of any tenant, and the address is the
 * operator's choice (loopback or the management network).
 */
import { createServer } from 'node:http';
import type { Registry } from 'prom-client';
import { parseHostPort } from '../domain/net.js';

export interface MetricsListener {
  /** `host:port` as bound. */
  listen: string;
  close(): Promise<void>;
}

export async function serveProcessMetrics(registry: Registry, listen: string): Promise<MetricsListener> {
  const { host, port } = parseHostPort(listen, 'amphora.healthMetricsListen');
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics is served here\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      (e: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`collecting metrics failed: ${e.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address();
  const where = typeof bound === 'object' && bound ? `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}` : listen;
  return { listen: where, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
