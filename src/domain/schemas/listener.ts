/** Request bodies of listeners, including the nested form graph create accepts. */
import { Type, Nullable, Uuid, Str, Cidr, Port, Tags, Strict, Patch, Enum } from '../schema-kit.js';
import { ClientAuthentication, ListenerProtocol } from '../enums.js';
import { PoolSingleCreate, TlsCiphers, TlsNameList } from './pool.js';
import { L7PolicySingleCreate } from './l7policy.js';
import { MaxInt32, MaxListenerTimeoutMs } from '../grammar/limits.js';

const Timeout = () => Type.Integer({ minimum: 0, maximum: MaxListenerTimeoutMs });

/** Everything both create and update may set. */
const settableFields = {
  name: Nullable(Str()),
  description: Nullable(Str()),
  admin_state_up: Nullable(Type.Boolean()),
  connection_limit: Nullable(Type.Integer({ minimum: -1, maximum: MaxInt32 })),
  default_pool_id: Nullable(Uuid()),
  insert_headers: Nullable(Type.Record(Type.String(), Str())),
  timeout_client_data: Nullable(Timeout()),
  timeout_member_connect: Nullable(Timeout()),
  timeout_member_data: Nullable(Timeout()),
  timeout_tcp_inspect: Nullable(Timeout()),
  default_tls_container_ref: Nullable(Str()),
  sni_container_refs: Nullable(Type.Array(Str())),
  client_authentication: Nullable(Enum(ClientAuthentication)),
  client_ca_tls_container_ref: Nullable(Str()),
  client_crl_container_ref: Nullable(Str()),
  allowed_cidrs: Nullable(Type.Array(Cidr())),
  tls_ciphers: Nullable(TlsCiphers()),
  tls_versions: Nullable(TlsNameList()),
  alpn_protocols: Nullable(TlsNameList()),
  hsts_max_age: Nullable(Type.Integer({ minimum: 0, maximum: MaxInt32 })),
  hsts_include_subdomains: Nullable(Type.Boolean()),
  hsts_preload: Nullable(Type.Boolean()),
  /** Ostia extension (domain/rules/acme.ts): a certificate for these names, ordered and renewed by ACME. */
  acme_domains: Nullable(Type.Array(Str())),
  tags: Tags(),
};

const createFields = {
  ...Patch(settableFields).properties,
  protocol: Enum(ListenerProtocol),
  protocol_port: Port(),
};

/** What insertListener takes: a listener of a known load balancer. */
export const ListenerInput = Strict(createFields);

export const ListenerCreate = Strict({
  ...createFields,
  loadbalancer_id: Uuid(),
  project_id: Type.Optional(Str(36)),
  tenant_id: Type.Optional(Str(36)),
});

export const ListenerCreateBody = Strict({ listener: ListenerCreate });

export const ListenerUpdateBody = Strict({ listener: Patch(settableFields) });

/** An L7 policy inside a graph create: its redirect pool may be named instead of referenced by id. */
export const GraphL7Policy = Strict({
  ...L7PolicySingleCreate.properties,
  redirect_pool: Type.Optional(PoolSingleCreate),
});

/** A listener inside a graph create: its default pool is given inline or by name. */
export const ListenerSingleCreate = Strict({
  ...createFields,
  default_pool: Type.Optional(PoolSingleCreate),
  l7policies: Type.Optional(Type.Array(GraphL7Policy)),
});
