/** Request bodies of pool members (single create, update, batch update). */
import { Type, Nullable, Uuid, Str, IpAddress, Port, Tags, Strict, Patch } from '../schema-kit.js';

const Weight = () => Type.Integer({ minimum: 0, maximum: 256 });

const memberFields = {
  name: Type.Optional(Nullable(Str())),
  admin_state_up: Type.Optional(Nullable(Type.Boolean())),
  address: IpAddress(),
  protocol_port: Port(),
  weight: Type.Optional(Nullable(Weight())),
  backup: Type.Optional(Nullable(Type.Boolean())),
  subnet_id: Type.Optional(Nullable(Uuid())),
  monitor_address: Type.Optional(Nullable(IpAddress())),
  monitor_port: Type.Optional(Nullable(Port())),
  request_sriov: Type.Optional(Nullable(Type.Boolean())),
  tags: Type.Optional(Tags()),
};

/** A member nested in a pool (graph create, POST /pools). */
export const MemberSingleCreate = Strict(memberFields);

/** Octavia accepts (and ignores) the owner: members belong to their load balancer's project. */
export const MemberCreate = Strict({ ...memberFields, project_id: Type.Optional(Str(36)), tenant_id: Type.Optional(Str(36)) });

export const MemberCreateBody = Strict({ member: MemberCreate });

export const MemberUpdateBody = Strict({
  member: Patch({
    name: Nullable(Str()),
    admin_state_up: Nullable(Type.Boolean()),
    weight: Nullable(Weight()),
    backup: Nullable(Type.Boolean()),
    monitor_address: Nullable(IpAddress()),
    monitor_port: Nullable(Port()),
    tags: Tags(),
  }),
});

/** PUT /pools/{id}/members: the wanted member set, each with POST's schema and defaults. */
export const MemberBatchBody = Strict({ members: Type.Array(MemberCreate) });
