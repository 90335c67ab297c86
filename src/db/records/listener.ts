import type { ListenerSpec } from '../../domain/rules/listener.js';
import { codec, type Row } from './codec.js';
import type { TreeObject } from './tree-object.js';

export interface ListenerRecord extends TreeObject, ListenerSpec {
  load_balancer_id: string;
  name: string;
  description: string;
  default_pool_id: string | null;
  /** Why its last certificate change was rolled back, or null: an extension old clients ignore. */
  status_reason: string | null;
}

export type ListenerRow = Row<ListenerRecord>;

export const listenerCodec = codec<ListenerRecord>({
  admin_state_up: 'bool',
  insert_headers: 'json',
  sni_container_refs: 'json',
  allowed_cidrs: 'json',
  tls_versions: 'json',
  alpn_protocols: 'json',
  hsts_include_subdomains: 'bool',
  hsts_preload: 'bool',
  acme_domains: 'json',
});
