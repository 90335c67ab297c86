/** What every resource module of the API is given. */
import type { Db } from '../db/database.js';
import type { Config } from '../config.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { NetworkService } from '../network/service.js';
import type { JobSignal } from '../controller/signal.js';
import type { KeyManager } from '../keymanager/index.js';
import type { Registry } from 'prom-client';
import type { RequestContext } from '../domain/context.js';

export interface ApiDeps {
  readonly db: Db;
  readonly config: Config;
  readonly providers: ProviderRegistry;
  readonly network: NetworkService;
  /** Wakes workers after a transaction that enqueued jobs has committed. */
  readonly jobs: JobSignal;
  /** The base URL clients reach this API at (links, catalog). */
  publicUrl(): string;
  /** Resolves the certificate references of listeners and pools. */
  readonly keyManager: KeyManager;
  /** Turns a request's headers into its caller, or throws UNAUTHORIZED (streams ask again while they last). */
  authenticate(headers: Record<string, string | string[] | undefined>): Promise<RequestContext>;
  /** Metrics of this process alone (the health manager's counters, where it runs here), served beside the database's. */
  readonly metrics: Registry;
}
