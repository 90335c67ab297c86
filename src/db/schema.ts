/**
 * Table shapes. Booleans are stored as 0/1 integers and timestamps as
 * `YYYY-MM-DDTHH:MM:SS` text so the same rows and queries work on SQLite and PostgreSQL.
 * Lists and maps are JSON text; tags have their own table so they can be filtered in SQL.
 */
type Bool = number;
type Json = string;

interface Statuses {
  provisioning_status: string;
  operating_status: string;
}
interface Timestamps {
  created_at: string;
  updated_at: string | null;
}
interface Owned {
  id: string;
  project_id: string;
}

export interface LoadBalancerTable extends Owned, Statuses, Timestamps {
  name: string;
  description: string;
  admin_state_up: Bool;
  vip_address: string | null;
  vip_port_id: string | null;
  vip_subnet_id: string | null;
  vip_network_id: string | null;
  vip_qos_policy_id: string | null;
  vip_sg_ids: Json;
  vip_vnic_type: string;
  additional_vips: Json;
  provider: string;
  flavor_id: string | null;
  availability_zone: string | null;
  /** Why the last operation failed, or null: an extension old clients ignore. */
  status_reason: string | null;
  /** Generation of the configuration pushed to its amphorae; bumped by every change. */
  config_version: number;
}

export interface ListenerTable extends Owned, Statuses, Timestamps {
  load_balancer_id: string;
  name: string;
  description: string;
  admin_state_up: Bool;
  protocol: string;
  protocol_port: number;
  connection_limit: number;
  default_pool_id: string | null;
  insert_headers: Json;
  timeout_client_data: number;
  timeout_member_connect: number;
  timeout_member_data: number;
  timeout_tcp_inspect: number;
  default_tls_container_ref: string | null;
  sni_container_refs: Json;
  client_authentication: string;
  client_ca_tls_container_ref: string | null;
  client_crl_container_ref: string | null;
  allowed_cidrs: Json | null;
  tls_ciphers: string | null;
  tls_versions: Json | null;
  alpn_protocols: Json | null;
  hsts_max_age: number | null;
  hsts_include_subdomains: Bool;
  hsts_preload: Bool;
  /** Why its last certificate change was rolled back, or null: an extension old clients ignore. */
  status_reason: string | null;
}

export interface PoolTable extends Owned, Statuses, Timestamps {
  load_balancer_id: string;
  name: string;
  description: string;
  admin_state_up: Bool;
  protocol: string;
  lb_algorithm: string;
  session_persistence: Json | null;
  tls_enabled: Bool;
  tls_container_ref: string | null;
  ca_tls_container_ref: string | null;
  crl_container_ref: string | null;
  tls_ciphers: string | null;
  tls_versions: Json | null;
  alpn_protocols: Json | null;
}

export interface MemberTable extends Owned, Statuses, Timestamps {
  pool_id: string;
  name: string;
  admin_state_up: Bool;
  address: string;
  protocol_port: number;
  weight: number;
  backup: Bool;
  subnet_id: string | null;
  monitor_address: string | null;
  monitor_port: number | null;
  vnic_type: string;
}

export interface HealthMonitorTable extends Owned, Statuses, Timestamps {
  pool_id: string;
  name: string;
  admin_state_up: Bool;
  type: string;
  delay: number;
  timeout: number;
  max_retries: number;
  max_retries_down: number;
  http_method: string | null;
  url_path: string | null;
  expected_codes: string | null;
  http_version: number | null;
  domain_name: string | null;
}

export interface L7PolicyTable extends Owned, Statuses, Timestamps {
  listener_id: string;
  name: string;
  description: string;
  admin_state_up: Bool;
  action: string;
  redirect_pool_id: string | null;
  redirect_url: string | null;
  redirect_prefix: string | null;
  redirect_http_code: number | null;
  position: number;
}

export interface L7RuleTable extends Owned, Statuses, Timestamps {
  l7policy_id: string;
  admin_state_up: Bool;
  type: string;
  compare_type: string;
  key: string | null;
  value: string;
  invert: Bool;
}

export interface TagTable {
  resource_id: string;
  tag: string;
}

export interface QuotaTable {
  project_id: string;
  load_balancer: number | null;
  listener: number | null;
  pool: number | null;
  health_monitor: number | null;
  member: number | null;
  l7policy: number | null;
  l7rule: number | null;
}

export interface FlavorProfileTable {
  id: string;
  name: string;
  provider_name: string;
  flavor_data: string;
}

export interface FlavorTable {
  id: string;
  name: string;
  description: string;
  enabled: Bool;
  flavor_profile_id: string;
}

export interface AvailabilityZoneProfileTable {
  id: string;
  name: string;
  provider_name: string;
  availability_zone_data: string;
}

export interface AvailabilityZoneTable {
  name: string;
  description: string;
  enabled: Bool;
  availability_zone_profile_id: string;
}

export interface AmphoraTable extends Timestamps {
  id: string;
  load_balancer_id: string | null;
  compute_id: string | null;
  lb_network_ip: string | null;
  vrrp_ip: string | null;
  ha_ip: string | null;
  vrrp_port_id: string | null;
  ha_port_id: string | null;
  cert_expiration: string | null;
  cert_busy: Bool;
  role: string | null;
  status: string;
  vrrp_interface: string | null;
  vrrp_id: number | null;
  vrrp_priority: number | null;
  cached_zone: string | null;
  image_id: string | null;
  compute_flavor: string | null;
  /** Epoch ms of the last accepted heartbeat, and its sequence number (replay guard). */
  last_heartbeat_at: number | null;
  last_heartbeat_seq: number | null;
  /** The config version this amphora last acknowledged. */
  config_version: number;
  /** https://<management address>:<port> of its agent. */
  agent_url: string | null;
  cert_serial: string | null;
  status_reason: string | null;
}

/** Counters per listener and amphora, accumulated from heartbeat deltas. */
export interface ListenerStatisticsTable {
  listener_id: string;
  amphora_id: string;
  bytes_in: number;
  bytes_out: number;
  active_connections: number;
  total_connections: number;
  request_errors: number;
  updated_at: number;
}

/** A port of the embedded network service: VIPs and, later, amphora ports. */
export interface PortTable {
  id: string;
  project_id: string;
  name: string;
  network_id: string;
  subnet_id: string;
  ip_address: string;
  device_id: string;
  device_owner: string;
  qos_policy_id: string | null;
  created_at: string;
}

/** One certificate, CA bundle or CRL a listener or pool uses, as last configured. */
export interface CertificateInUseTable {
  object_id: string;
  object_kind: 'listener' | 'pool';
  /** default, sni, client_ca, client_crl (listener); certificate, ca, crl (pool). */
  role: string;
  ref: string;
  load_balancer_id: string;
  project_id: string;
  /** The certificate's (a CA bundle's earliest) not-after; a CRL's next update. */
  not_after: string;
  fingerprint_sha256: string | null;
  subject_cn: string | null;
  /** The last expiry threshold (30, 14, 7 days) warned about, or null. */
  warned_days: number | null;
  recorded_at: string;
}

/** A persisted unit of provider work: claimed with a lease, resumed after a crash. */
export interface JobTable {
  id: string;
  load_balancer_id: string;
  provider: string;
  operation: string;
  payload: Json;
  state: string;
  /** Index of the next step to run: the flow's persisted progress. */
  next_step: number;
  attempts: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  error: string | null;
  created_at: string;
  updated_at: string | null;
}

/** One row per flow step run: the provisioning trace. */
export interface JobStepTable {
  id: string;
  job_id: string;
  load_balancer_id: string;
  step: string;
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
  error: string | null;
}

/** A key manager secret; the payload only as AES-256-GCM ciphertext (null until it is stored). */
export interface KeyManagerSecretTable {
  id: string;
  project_id: string;
  creator_id: string | null;
  name: string | null;
  secret_type: string;
  algorithm: string | null;
  bit_length: number | null;
  mode: string | null;
  expiration: string | null;
  content_type: string | null;
  /** Which encryption key sealed it, so keys can rotate. */
  key_id: string | null;
  nonce: string | null;
  ciphertext: string | null;
  auth_tag: string | null;
  created_at: string;
  updated_at: string;
}

export interface KeyManagerContainerTable {
  id: string;
  project_id: string;
  creator_id: string | null;
  name: string | null;
  type: string;
  created_at: string;
  updated_at: string;
}

export interface KeyManagerContainerSecretTable {
  container_id: string;
  secret_id: string;
  name: string | null;
  position: number;
}

/** The `read` ACL of a secret or container; no row = Barbican's implicit project access. */
export interface KeyManagerAclTable {
  entity_kind: string;
  entity_id: string;
  operation: string;
  project_access: Bool;
  /** JSON list of user ids. */
  users: Json;
  created_at: string;
  updated_at: string;
}

export interface KeyManagerConsumerTable {
  entity_kind: string;
  entity_id: string;
  project_id: string | null;
  service: string;
  resource_type: string;
  resource_id: string;
  created_at: string;
}

/** A load balancer's failed failovers (see src/db/failover-memory.ts). */
export interface FailoverMemoryTable {
  load_balancer_id: string;
  kind: 'configuration' | 'infrastructure';
  failures: number;
  /** Epoch milliseconds of the last failure. */
  failed_at: number;
}

export interface Database {
  load_balancer: LoadBalancerTable;
  listener: ListenerTable;
  pool: PoolTable;
  member: MemberTable;
  health_monitor: HealthMonitorTable;
  l7policy: L7PolicyTable;
  l7rule: L7RuleTable;
  tag: TagTable;
  quota: QuotaTable;
  flavor_profile: FlavorProfileTable;
  flavor: FlavorTable;
  availability_zone_profile: AvailabilityZoneProfileTable;
  availability_zone: AvailabilityZoneTable;
  amphora: AmphoraTable;
  listener_statistics: ListenerStatisticsTable;
  port: PortTable;
  job: JobTable;
  job_step: JobStepTable;
  key_manager_secret: KeyManagerSecretTable;
  key_manager_container: KeyManagerContainerTable;
  key_manager_container_secret: KeyManagerContainerSecretTable;
  key_manager_acl: KeyManagerAclTable;
  key_manager_consumer: KeyManagerConsumerTable;
  certificate_in_use: CertificateInUseTable;
  failover_memory: FailoverMemoryTable;
}

export type TableName = keyof Database;
