import type { CreateTableBuilder, Kysely } from 'kysely';

// Migrations see an untyped database: their job is to create the shapes schema.ts declares.
type AnyTable = CreateTableBuilder<string, string>;

const owned = (t: AnyTable) =>
  t
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('project_id', 'varchar(255)', (c) => c.notNull())
    .addColumn('provisioning_status', 'varchar(16)', (c) => c.notNull())
    .addColumn('operating_status', 'varchar(16)', (c) => c.notNull())
    .addColumn('created_at', 'varchar(19)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(19)');

export async function up(db: Kysely<unknown>): Promise<void> {
  await owned(db.schema.createTable('load_balancer'))
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('description', 'varchar(255)', (c) => c.notNull())
    .addColumn('admin_state_up', 'integer', (c) => c.notNull())
    .addColumn('vip_address', 'varchar(64)')
    .addColumn('vip_port_id', 'varchar(36)')
    .addColumn('vip_subnet_id', 'varchar(36)')
    .addColumn('vip_network_id', 'varchar(36)')
    .addColumn('vip_qos_policy_id', 'varchar(36)')
    .addColumn('vip_sg_ids', 'text', (c) => c.notNull())
    .addColumn('vip_vnic_type', 'varchar(16)', (c) => c.notNull())
    .addColumn('additional_vips', 'text', (c) => c.notNull())
    .addColumn('provider', 'varchar(64)', (c) => c.notNull())
    .addColumn('flavor_id', 'varchar(36)')
    .addColumn('availability_zone', 'varchar(255)')
    .addColumn('status_reason', 'text')
    .execute();
  await db.schema.createIndex('load_balancer_project').on('load_balancer').columns(['project_id', 'created_at']).execute();

  await owned(db.schema.createTable('listener'))
    .addColumn('load_balancer_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('description', 'varchar(255)', (c) => c.notNull())
    .addColumn('admin_state_up', 'integer', (c) => c.notNull())
    .addColumn('protocol', 'varchar(32)', (c) => c.notNull())
    .addColumn('protocol_port', 'integer', (c) => c.notNull())
    .addColumn('connection_limit', 'integer', (c) => c.notNull())
    .addColumn('default_pool_id', 'varchar(36)')
    .addColumn('insert_headers', 'text', (c) => c.notNull())
    .addColumn('timeout_client_data', 'integer', (c) => c.notNull())
    .addColumn('timeout_member_connect', 'integer', (c) => c.notNull())
    .addColumn('timeout_member_data', 'integer', (c) => c.notNull())
    .addColumn('timeout_tcp_inspect', 'integer', (c) => c.notNull())
    .addColumn('default_tls_container_ref', 'varchar(255)')
    .addColumn('sni_container_refs', 'text', (c) => c.notNull())
    .addColumn('client_authentication', 'varchar(16)', (c) => c.notNull())
    .addColumn('client_ca_tls_container_ref', 'varchar(255)')
    .addColumn('client_crl_container_ref', 'varchar(255)')
    .addColumn('allowed_cidrs', 'text')
    .addColumn('tls_ciphers', 'varchar(2048)')
    .addColumn('tls_versions', 'text')
    .addColumn('alpn_protocols', 'text')
    .addColumn('hsts_max_age', 'integer')
    .addColumn('hsts_include_subdomains', 'integer', (c) => c.notNull())
    .addColumn('hsts_preload', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('listener_lb').on('listener').column('load_balancer_id').execute();

  await owned(db.schema.createTable('pool'))
    .addColumn('load_balancer_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('description', 'varchar(255)', (c) => c.notNull())
    .addColumn('admin_state_up', 'integer', (c) => c.notNull())
    .addColumn('protocol', 'varchar(16)', (c) => c.notNull())
    .addColumn('lb_algorithm', 'varchar(32)', (c) => c.notNull())
    .addColumn('session_persistence', 'text')
    .addColumn('tls_enabled', 'integer', (c) => c.notNull())
    .addColumn('tls_container_ref', 'varchar(255)')
    .addColumn('ca_tls_container_ref', 'varchar(255)')
    .addColumn('crl_container_ref', 'varchar(255)')
    .addColumn('tls_ciphers', 'varchar(2048)')
    .addColumn('tls_versions', 'text')
    .addColumn('alpn_protocols', 'text')
    .execute();
  await db.schema.createIndex('pool_lb').on('pool').column('load_balancer_id').execute();

  await owned(db.schema.createTable('member'))
    .addColumn('pool_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('admin_state_up', 'integer', (c) => c.notNull())
    .addColumn('address', 'varchar(64)', (c) => c.notNull())
    .addColumn('protocol_port', 'integer', (c) => c.notNull())
    .addColumn('weight', 'integer', (c) => c.notNull())
    .addColumn('backup', 'integer', (c) => c.notNull())
    .addColumn('subnet_id', 'varchar(36)')
    .addColumn('monitor_address', 'varchar(64)')
    .addColumn('monitor_port', 'integer')
    .addColumn('vnic_type', 'varchar(16)', (c) => c.notNull())
    .addUniqueConstraint('member_pool_address_port', ['pool_id', 'address', 'protocol_port'])
    .execute();

  await owned(db.schema.createTable('health_monitor'))
    .addColumn('pool_id', 'varchar(36)', (c) => c.notNull().unique())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('admin_state_up', 'integer', (c) => c.notNull())
    .addColumn('type', 'varchar(16)', (c) => c.notNull())
    .addColumn('delay', 'integer', (c) => c.notNull())
    .addColumn('timeout', 'integer', (c) => c.notNull())
    .addColumn('max_retries', 'integer', (c) => c.notNull())
    .addColumn('max_retries_down', 'integer', (c) => c.notNull())
    .addColumn('http_method', 'varchar(16)')
    .addColumn('url_path', 'varchar(2048)')
    .addColumn('expected_codes', 'varchar(64)')
    .addColumn('http_version', 'real')
    .addColumn('domain_name', 'varchar(255)')
    .execute();

  await owned(db.schema.createTable('l7policy'))
    .addColumn('listener_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('description', 'varchar(255)', (c) => c.notNull())
    .addColumn('admin_state_up', 'integer', (c) => c.notNull())
    .addColumn('action', 'varchar(32)', (c) => c.notNull())
    .addColumn('redirect_pool_id', 'varchar(36)')
    .addColumn('redirect_url', 'varchar(2048)')
    .addColumn('redirect_prefix', 'varchar(2048)')
    .addColumn('redirect_http_code', 'integer')
    .addColumn('position', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('l7policy_listener').on('l7policy').column('listener_id').execute();

  await owned(db.schema.createTable('l7rule'))
    .addColumn('l7policy_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('admin_state_up', 'integer', (c) => c.notNull())
    .addColumn('type', 'varchar(32)', (c) => c.notNull())
    .addColumn('compare_type', 'varchar(32)', (c) => c.notNull())
    .addColumn('key', 'varchar(255)')
    .addColumn('value', 'varchar(255)', (c) => c.notNull())
    .addColumn('invert', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('l7rule_policy').on('l7rule').column('l7policy_id').execute();

  await db.schema
    .createTable('tag')
    .addColumn('resource_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('tag', 'varchar(255)', (c) => c.notNull())
    .addPrimaryKeyConstraint('tag_pk', ['resource_id', 'tag'])
    .execute();
  await db.schema.createIndex('tag_by_value').on('tag').columns(['tag', 'resource_id']).execute();

  await db.schema
    .createTable('quota')
    .addColumn('project_id', 'varchar(255)', (c) => c.primaryKey())
    .addColumn('load_balancer', 'integer')
    .addColumn('listener', 'integer')
    .addColumn('pool', 'integer')
    .addColumn('health_monitor', 'integer')
    .addColumn('member', 'integer')
    .addColumn('l7policy', 'integer')
    .addColumn('l7rule', 'integer')
    .execute();

  await db.schema
    .createTable('flavor_profile')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('provider_name', 'varchar(255)', (c) => c.notNull())
    .addColumn('flavor_data', 'varchar(4096)', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('flavor')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
    .addColumn('description', 'varchar(255)', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('flavor_profile_id', 'varchar(36)', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('availability_zone_profile')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('provider_name', 'varchar(255)', (c) => c.notNull())
    .addColumn('availability_zone_data', 'varchar(4096)', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('availability_zone')
    .addColumn('name', 'varchar(255)', (c) => c.primaryKey())
    .addColumn('description', 'varchar(255)', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('availability_zone_profile_id', 'varchar(36)', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('amphora')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('load_balancer_id', 'varchar(36)')
    .addColumn('compute_id', 'varchar(255)')
    .addColumn('lb_network_ip', 'varchar(64)')
    .addColumn('vrrp_ip', 'varchar(64)')
    .addColumn('ha_ip', 'varchar(64)')
    .addColumn('vrrp_port_id', 'varchar(36)')
    .addColumn('ha_port_id', 'varchar(36)')
    .addColumn('cert_expiration', 'varchar(19)')
    .addColumn('cert_busy', 'integer', (c) => c.notNull())
    .addColumn('role', 'varchar(16)')
    .addColumn('status', 'varchar(32)', (c) => c.notNull())
    .addColumn('vrrp_interface', 'varchar(16)')
    .addColumn('vrrp_id', 'integer')
    .addColumn('vrrp_priority', 'integer')
    .addColumn('cached_zone', 'varchar(255)')
    .addColumn('image_id', 'varchar(36)')
    .addColumn('compute_flavor', 'varchar(255)')
    .addColumn('created_at', 'varchar(19)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(19)')
    .execute();
  await db.schema.createIndex('amphora_lb').on('amphora').column('load_balancer_id').execute();

  await db.schema
    .createTable('port')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('project_id', 'varchar(255)', (c) => c.notNull())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('network_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('subnet_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('ip_address', 'varchar(64)', (c) => c.notNull())
    .addColumn('device_id', 'varchar(255)', (c) => c.notNull())
    .addColumn('device_owner', 'varchar(255)', (c) => c.notNull())
    .addColumn('qos_policy_id', 'varchar(36)')
    .addColumn('created_at', 'varchar(19)', (c) => c.notNull())
    .addUniqueConstraint('port_subnet_address', ['subnet_id', 'ip_address'])
    .execute();

  await db.schema
    .createTable('job')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('load_balancer_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('provider', 'varchar(64)', (c) => c.notNull())
    .addColumn('operation', 'varchar(64)', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('next_step', 'integer', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('lease_owner', 'varchar(255)')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('error', 'text')
    // Jobs of one LB must sort in the order they were enqueued: see enqueue().
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(19)')
    .execute();
  await db.schema.createIndex('job_state').on('job').columns(['state', 'created_at']).execute();

  await db.schema
    .createTable('job_step')
    .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('job_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('load_balancer_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('step', 'varchar(128)', (c) => c.notNull())
    .addColumn('started_at', 'varchar(24)', (c) => c.notNull())
    .addColumn('finished_at', 'varchar(24)')
    .addColumn('duration_ms', 'real')
    .addColumn('error', 'text')
    .execute();
  await db.schema.createIndex('job_step_lb').on('job_step').columns(['load_balancer_id', 'started_at']).execute();
}
