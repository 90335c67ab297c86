/**
 * Compute drivers start and stop amphorae. An amphora is whatever runs the agent and its
 * HAProxy: a VM in Octavia, a detached process group in the `local` driver. Drivers are
 * stateless towards the database; the provider's flows record the compute id they return.
 */

/** Everything an amphora needs at boot (Octavia hands the same over a config drive). */
export interface AmphoraSpec {
  amphoraId: string;
  /** The amphora's own directory; for `local` it must be `<rootDir>/<amphoraId>`. */
  dir: string;
  managementAddress: string;
  agentPort: number;
  /** The agent's server cert and key, and the CA its clients (controllers) must chain to. */
  certPem: string;
  keyPem: string;
  clientCaPem: string;
  heartbeat: { key: string; targets: string[]; intervalMs: number };
  haproxyBinary: string;
  maxconn: number;
}

/**
 * `<dir>/agent.json`, which `ostia agent --dir <dir>` reads: the spec with the PEMs replaced
 * by absolute paths of 0600 files beside it, so secrets never travel on a command line.
 */
export interface AgentBootConfig {
  amphoraId: string;
  managementAddress: string;
  agentPort: number;
  certFile: string;
  keyFile: string;
  clientCaFile: string;
  heartbeat: { key: string; targets: string[]; intervalMs: number };
  haproxyBinary: string;
  maxconn: number;
}

export type ComputeStatus = 'running' | 'stopped';

export interface ComputeDriver {
  /** Starts the amphora and returns its compute id; booting an amphora that already runs returns its id again. */
  boot(spec: AmphoraSpec, signal: AbortSignal): Promise<string>;
  /**
   * Resolves once the amphora says its agent serves: an event the driver awaits, not a poll. Resolves at
   * once for an amphora this process did not boot (a resumed flow then polls the agent itself); rejects
   * when the amphora's processes exit first.
   */
  started(computeId: string, signal: AbortSignal): Promise<void>;
  /** 'stopped' also for ids the driver does not know (deleted, or never booted). */
  status(computeId: string): Promise<ComputeStatus>;
  /** Stops everything the amphora runs and removes it; deleting an unknown id succeeds. */
  delete(computeId: string): Promise<void>;
  /** Every amphora the driver holds, running or not: housekeeping compares this with the database. */
  list(): Promise<Array<{ computeId: string; amphoraId: string }>>;
}
