/** The wire shapes the pages read (Octavia's v2 API and Ostia's extensions), as far as they use them. */
import type { HealthMonitorAttrs } from '../../src/domain/rules/healthmonitor.js';

export interface LoadBalancer {
  id: string;
  name: string | null;
  description: string | null;
  project_id: string;
  provider: string;
  provisioning_status: string;
  operating_status: string;
  vip_address: string | null;
  vip_subnet_id: string | null;
  vip_port_id: string | null;
  flavor_id: string | null;
  availability_zone: string | null;
  admin_state_up: boolean;
  listeners: Array<{ id: string }>;
  pools: Array<{ id: string }>;
  created_at: string;
  updated_at: string | null;
  tags: string[];
  /** Ostia extension: why the last change failed. */
  status_reason: string | null;
}

/** What every object of a load balancer's tree has. */
interface TreeObject {
  id: string;
  name: string | null;
  project_id: string;
  provisioning_status: string;
  operating_status: string;
  admin_state_up: boolean;
}

export interface Listener extends TreeObject {
  protocol: string;
  protocol_port: number;
  default_pool_id: string | null;
  connection_limit: number;
  default_tls_container_ref: string | null;
  l7policies: Array<{ id: string }>;
  status_reason: string | null;
}

export interface Pool extends TreeObject {
  protocol: string;
  lb_algorithm: string;
  session_persistence: { type: string; cookie_name?: string | null } | null;
  listeners: Array<{ id: string }>;
  healthmonitor_id: string | null;
  members: Array<{ id: string }>;
  tls_enabled: boolean;
}

export interface Member extends TreeObject {
  address: string;
  protocol_port: number;
  weight: number;
  backup: boolean;
  monitor_address: string | null;
  monitor_port: number | null;
}

export type HealthMonitor = TreeObject & Omit<HealthMonitorAttrs, 'name' | 'admin_state_up'> & { pools: Array<{ id: string }> };

export interface L7Policy extends TreeObject {
  listener_id: string;
  action: string;
  position: number;
  redirect_pool_id: string | null;
  redirect_url: string | null;
  redirect_prefix: string | null;
  redirect_http_code: number | null;
  rules: Array<{ id: string }>;
}

export interface L7Rule extends TreeObject {
  type: string;
  compare_type: string;
  key: string | null;
  value: string;
  invert: boolean;
}

/** `GET /v2/lbaas/loadbalancers/<id>/status`: statuses only, pools under each listener that uses them. */
export interface StatusTree {
  statuses: { loadbalancer: LoadBalancerStatus };
}

interface StatusNode {
  id: string;
  name: string | null;
  provisioning_status: string;
  operating_status: string;
}

export interface LoadBalancerStatus extends StatusNode {
  /** Ostia extension: why the last change failed. */
  status_reason?: string | null;
  listeners: ListenerStatus[];
}

/** A listener's traffic counters since its amphorae started counting (Ostia extension). */
export interface ListenerStats {
  bytes_in: number;
  bytes_out: number;
  active_connections: number;
  total_connections: number;
  request_errors: number;
}

export interface ListenerStatus extends StatusNode {
  /** Ostia extension: why the last certificate change was rolled back. */
  status_reason?: string;
  /** Ostia extension: the earliest expiry of the certificates it serves. */
  certificate?: { not_after: string; days_to_expiry: number; warning: string | null };
  stats?: ListenerStats;
  pools: PoolStatus[];
}

export interface PoolStatus extends StatusNode {
  health_monitor?: StatusNode & { type: string };
  members: Array<StatusNode & { address: string; protocol_port: number }>;
}
