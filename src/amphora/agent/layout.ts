/**
 * The files of one amphora's directory that the agent owns (the compute driver writes
 * agent.json and the TLS material beside them). Everything is in the directory, so an agent
 * restarted on it picks up where the last one stopped.
 */
import { join } from 'node:path';
import type { HaproxyPaths } from '../haproxy/render.js';
import type { HaproxyFiles } from '../haproxy/process.js';

export interface AgentLayout {
  dir: string;
  haproxy: HaproxyFiles;
  /** The last config applied, as pushed: re-applied when the agent starts. */
  appliedConfig: string;
  /** Heartbeat sequence number and last counters. */
  heartbeatState: string;
}

export function agentLayout(dir: string): AgentLayout {
  return {
    dir,
    haproxy: {
      config: join(dir, 'haproxy.cfg'),
      masterSocket: join(dir, 'haproxy-master.sock'),
      statsSocket: join(dir, 'haproxy.sock'),
      pidFile: join(dir, 'haproxy.pid'),
      stateFile: join(dir, 'haproxy.state'),
    },
    appliedConfig: join(dir, 'applied-config.json'),
    heartbeatState: join(dir, 'heartbeat-state.json'),
  };
}

/** What the renderer writes into haproxy.cfg's global section. */
export function renderPaths(layout: AgentLayout): HaproxyPaths {
  const { stateFile, statsSocket, pidFile } = layout.haproxy;
  return { stateFile, statsSocket, pidFile };
}
