import type { L7PolicyAction } from '../../domain/enums.js';
import { codec, type Row } from './codec.js';
import type { TreeObject } from './tree-object.js';

export interface L7PolicyRecord extends TreeObject {
  listener_id: string;
  name: string;
  description: string;
  action: L7PolicyAction;
  redirect_pool_id: string | null;
  redirect_url: string | null;
  redirect_prefix: string | null;
  redirect_http_code: number | null;
  /** 1..n within its listener. */
  position: number;
}

export type L7PolicyRow = Row<L7PolicyRecord>;

export const l7PolicyCodec = codec<L7PolicyRecord>({ admin_state_up: 'bool' });
