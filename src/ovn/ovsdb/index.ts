/** The OVSDB client's public surface, for the OVN provider. */
export { OvsdbClient, OvsdbClosedError, type ReconnectReport } from './client.js';
export { Uuid, NamedUuid, mapToRecord, datumEquals, type Atom, type Datum } from './datum.js';
export { DisconnectedError, JsonRpcError, parseRemote, type TlsFiles } from './json-rpc.js';
export { Monitor, type MonitorRequests, type RowChange, type ResyncReport } from './monitor.js';
export { OvsdbOperationError, type Condition, type Mutation, type Operation, type OperationResult, type Row, type RowInput } from './operations.js';
export { OVSDB_CLIENT_DEFAULTS, OvsdbOptionsError, resolveOptions, type OvsdbClientOptions } from './options.js';
export {
  HEALTH_CHECK_UNSUPPORTED_TEXT,
  HealthCheckUnsupportedError,
  assertHealthChecksSupported,
  hasColumn,
  hasTable,
  schemaVersion,
  supportsHealthChecks,
  versionAtLeast,
  type DatabaseSchema,
} from './schema.js';
