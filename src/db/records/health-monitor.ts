import type { HealthMonitorAttrs } from '../../domain/rules/healthmonitor.js';
import { codec, type Row } from './codec.js';
import type { TreeObject } from './tree-object.js';

export interface HealthMonitorRecord extends TreeObject, HealthMonitorAttrs {
  pool_id: string;
}

export type HealthMonitorRow = Row<HealthMonitorRecord>;

export const healthMonitorCodec = codec<HealthMonitorRecord>({ admin_state_up: 'bool' });
