import type { L7RuleCompareType, L7RuleType } from '../../domain/enums.js';
import { codec, type Row } from './codec.js';
import type { TreeObject } from './tree-object.js';

export interface L7RuleRecord extends TreeObject {
  l7policy_id: string;
  type: L7RuleType;
  compare_type: L7RuleCompareType;
  key: string | null;
  value: string;
  invert: boolean;
}

export type L7RuleRow = Row<L7RuleRecord>;

export const l7RuleCodec = codec<L7RuleRecord>({ admin_state_up: 'bool', invert: 'bool' });
