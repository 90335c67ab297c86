import type { VnicType } from '../../domain/enums.js';
import { codec, type Row } from './codec.js';
import type { TreeObject } from './tree-object.js';

export interface MemberRecord extends TreeObject {
  pool_id: string;
  name: string;
  address: string;
  protocol_port: number;
  weight: number;
  backup: boolean;
  subnet_id: string | null;
  monitor_address: string | null;
  monitor_port: number | null;
  vnic_type: VnicType;
}

export type MemberRow = Row<MemberRecord>;

export const memberCodec = codec<MemberRecord>({ admin_state_up: 'bool', backup: 'bool' });
