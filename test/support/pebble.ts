/**
 * Debian's pebble, a real RFC 8555 ACME server meant for tests, with its DNS from
 * pebble-challtestsrv: names the test registers resolve to the addresses it gives (a VIP), so
 * pebble's validation connects to port 80 (HTTP-01) or 443 (TLS-ALPN-01) of that VIP. Its HTTPS certificate comes
 * from the test PKI (the caller trusts it as acme.caFile); the CA it issues from is made anew
 * at each start and read from its management port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { createConnection } from 'node:net';
import { freeTcpPort, freeUdpPort, eventually } from './amphora-fixtures.js';
import type { TestPki } from './test-pki.js';

export interface Pebble {
  directoryUrl: string;
  /** The test PKI's CA file the directory's HTTPS certificate chains to. */
  caFile: string;
  /** Makes `host` resolve to `address` for pebble's validation. */
  resolve(host: string, address: string): Promise<void>;
  /** The root pebble issues certificates from (PEM). */
  issuingRoot(): Promise<string>;
  stop(): Promise<void>;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export async function startPebble(dir: string, pki: TestPki): Promise<Pebble> {
  const [acmePort, managementPort, dnsPort, challengeManagementPort] = await Promise.all([freeTcpPort(), freeTcpPort(), freeUdpPort(), freeTcpPort()]);
  const server = pki.leaf({ cn: 'localhost', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], key: 'ec-p256' });
  writeFileSync(join(dir, 'pebble-cert.pem'), server.certPem + pki.intermediate.certPem);
  writeFileSync(join(dir, 'pebble-key.pem'), server.keyPem);
  const caFile = join(dir, 'pebble-trust.pem');
  writeFileSync(caFile, pki.intermediate.certPem + pki.root.certPem);
  const config = join(dir, 'pebble.json');
  writeFileSync(config, JSON.stringify({
    pebble: {
      listenAddress: `127.0.0.1:${acmePort}`,
      managementListenAddress: `127.0.0.1:${managementPort}`,
      certificate: join(dir, 'pebble-cert.pem'),
      privateKey: join(dir, 'pebble-key.pem'),
      // RFC 8555 §8.3 and RFC 8737 §3: HTTP-01 is validated on port 80 and TLS-ALPN-01 on 443, as a public ACME server does.
      httpPort: 80,
      tlsPort: 443,
      ocspResponderURL: '',
      externalAccountBindingRequired: false,
    },
  }));
  const dns = spawn('pebble-challtestsrv', [
    '-dns01', `127.0.0.1:${dnsPort}`, '-http01', '', '-https01', '', '-tlsalpn01', '', '-management', `127.0.0.1:${challengeManagementPort}`,
    // Names not registered resolve nowhere useful: no validation of them can succeed by accident.
    '-defaultIPv4', '127.0.0.254', '-defaultIPv6', '',
  ], { stdio: 'ignore' });
  const pebble = spawn('pebble', ['-config', config, '-dnsserver', `127.0.0.1:${dnsPort}`], {
    stdio: 'ignore',
    // No artificial delays or refused nonces, and every order validated afresh (a renewal too).
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
  });
  const stop = async () => void (await Promise.all([stopped(pebble), stopped(dns)]));
  try {
    await eventually(async () => (await listening(acmePort)) && (await listening(challengeManagementPort)), 'pebble and its DNS listening', 30_000, 100);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    directoryUrl: `https://localhost:${acmePort}/dir`,
    caFile,
    async resolve(host, address) {
      const res = await fetch(`http://127.0.0.1:${challengeManagementPort}/add-a`, { method: 'POST', body: JSON.stringify({ host, addresses: [address] }) });
      if (res.status !== 200) throw new Error(`pebble-challtestsrv refused ${host} → ${address}: HTTP ${res.status} ${await res.text()}`);
    },
    issuingRoot: () =>
      new Promise((resolve, reject) => {
        const req = request(`https://localhost:${managementPort}/roots/0`, { ca: pki.intermediate.certPem + pki.root.certPem }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`pebble roots: HTTP ${res.statusCode}`))));
        });
        req.on('error', reject);
        req.end();
      }),
    stop,
  };
}
