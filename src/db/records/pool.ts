import type { PoolSpec } from '../../domain/rules/pool.js';
import { codec, type Row } from './codec.js';
import type { TreeObject } from './tree-object.js';

export interface PoolRecord extends TreeObject, PoolSpec {
  load_balancer_id: string;
  name: string;
  description: string;
}

export type PoolRow = Row<PoolRecord>;

export const poolCodec = codec<PoolRecord>({
  admin_state_up: 'bool',
  session_persistence: 'json',
  tls_enabled: 'bool',
  tls_versions: 'json',
  alpn_protocols: 'json',
});
