/**
 * What an amphora would do with a load balancer as the database holds it: build its config as the
 * amphora provider does, render haproxy.cfg, write the TLS files beside it and run `haproxy -c`
 * (HaproxyProcess.validate, the check the agent runs before every reload).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HaproxyProcess } from '../../src/amphora-agent/haproxy/process.js';
import { RenderError, renderHaproxyConfig } from '../../src/amphora-agent/haproxy/render.js';
import { tlsFiles } from '../../src/amphora-agent/haproxy/tls-files.js';
import { buildAmphoraConfig } from '../../src/providers/amphora/config-builder.js';
import type { Harness } from './harness.js';
import { scratchPaths } from './render-fixtures.js';

export const HAPROXY_BINARY = '/usr/sbin/haproxy';
const AMPHORA_ID = '0a0a0a0a-0000-4000-8000-00000000000a';
const MAXCONN = 8000;

/** Null when the load balancer renders and `haproxy -c` accepts it; else the renderer's or HAProxy's refusal. */
export async function checkLoadBalancer(h: Harness, lbId: string): Promise<string | null> {
  const config = await buildAmphoraConfig(h.runtime.db.kysely, h.runtime.keyManager, lbId, AMPHORA_ID, 1);
  const dir = mkdtempSync(join(tmpdir(), 'ostia-grammar-'));
  try {
    const files = { config: join(dir, 'haproxy.cfg'), masterSocket: join(dir, 'master.sock'), statsSocket: join(dir, 'haproxy.sock'), pidFile: join(dir, 'haproxy.pid'), stateFile: join(dir, 'haproxy.state') };
    const paths = scratchPaths(dir);
    let text: string;
    try {
      text = renderHaproxyConfig(config, paths, { maxconn: MAXCONN });
    } catch (e) {
      if (e instanceof RenderError) return `render: ${e.message}`;
      throw e;
    }
    mkdirSync(paths.tlsDir);
    for (const file of tlsFiles(config)) writeFileSync(join(paths.tlsDir, file.name), file.pem, { mode: 0o600 });
    const haproxy = new HaproxyProcess({ binary: HAPROXY_BINARY, files, log: console });
    const refusal = await haproxy.validate(text);
    return refusal === null ? null : `haproxy -c: ${refusal}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
