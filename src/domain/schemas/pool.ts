/** Request bodies of pools, including the nested form graph create and POST /pools accept. */
import { Type, Nullable, Uuid, Str, IpAddress, Tags, Strict, Patch, Enum } from '../schema-kit.js';
import { LbAlgorithm, PoolProtocol, SessionPersistenceType } from '../enums.js';
import { TLS_CIPHERS_PATTERN } from '../grammar/tls.js';
import { HealthMonitorSingleCreate } from './healthmonitor.js';
import { MemberSingleCreate } from './member.js';

const spFields = {
  cookie_name: Type.Optional(Nullable(Str())),
  persistence_timeout: Type.Optional(Nullable(Type.Integer())),
  persistence_granularity: Type.Optional(Nullable(IpAddress())),
};

export const SessionPersistenceCreate = Strict({ type: Enum(SessionPersistenceType), ...spFields });
/** On PUT the type may be omitted: the stored one is kept. */
export const SessionPersistenceUpdate = Strict({ type: Type.Optional(Enum(SessionPersistenceType)), ...spFields });

/** Octavia's alphabet and length, then the names and meaning of grammar/tls.ts. */
export const TlsCiphers = () => Type.String({ maxLength: 2048, pattern: TLS_CIPHERS_PATTERN, format: 'cipher-list' });
/** Checked against the known values by the rules, with Octavia's own messages. */
export const TlsNameList = () => Type.Array(Str(32));

const tlsFields = {
  tls_enabled: Type.Optional(Nullable(Type.Boolean())),
  tls_container_ref: Type.Optional(Nullable(Str())),
  ca_tls_container_ref: Type.Optional(Nullable(Str())),
  crl_container_ref: Type.Optional(Nullable(Str())),
  tls_ciphers: Type.Optional(Nullable(TlsCiphers())),
  tls_versions: Type.Optional(Nullable(TlsNameList())),
  alpn_protocols: Type.Optional(Nullable(TlsNameList())),
};

const poolFields = {
  name: Type.Optional(Nullable(Str())),
  description: Type.Optional(Nullable(Str())),
  admin_state_up: Type.Optional(Nullable(Type.Boolean())),
  session_persistence: Type.Optional(Nullable(SessionPersistenceCreate)),
  ...tlsFields,
  tags: Type.Optional(Tags()),
  healthmonitor: Type.Optional(HealthMonitorSingleCreate),
  members: Type.Optional(Type.Array(MemberSingleCreate)),
};

/**
 * A pool inside a graph create. Protocol and algorithm are optional here because a nested
 * occurrence may be a bare `{name}` reference; graph create checks full definitions itself.
 */
export const PoolSingleCreate = Strict({
  ...poolFields,
  protocol: Type.Optional(Enum(PoolProtocol)),
  lb_algorithm: Type.Optional(Enum(LbAlgorithm)),
});

export const PoolCreate = Strict({
  ...poolFields,
  protocol: Enum(PoolProtocol),
  lb_algorithm: Enum(LbAlgorithm),
  loadbalancer_id: Type.Optional(Uuid()),
  listener_id: Type.Optional(Uuid()),
  project_id: Type.Optional(Str(36)),
  tenant_id: Type.Optional(Str(36)),
});

export const PoolCreateBody = Strict({ pool: PoolCreate });

export const PoolUpdateBody = Strict({
  pool: Patch({
    name: Nullable(Str()),
    description: Nullable(Str()),
    admin_state_up: Nullable(Type.Boolean()),
    lb_algorithm: Enum(LbAlgorithm),
    session_persistence: Nullable(SessionPersistenceUpdate),
    ...tlsFields,
    tags: Tags(),
  }),
});
