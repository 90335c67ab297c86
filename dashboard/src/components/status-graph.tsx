/**
 * A load balancer's status tree drawn as a graph: the load balancer, its listeners, their pools
 * and each pool's monitor and members as columns of boxes joined by lines (one column under the
 * other on a narrow screen). A box is tinted by its operating status and names its provisioning
 * status; it links to the object's row further down the page. A pool two listeners use is drawn
 * under both, as the tree lists it.
 */
import type { ComponentChildren } from 'preact';
import type { ListenerStatus, LoadBalancerStatus, PoolStatus } from '../types.js';
import { Status, statusClass } from './status.js';

interface NodeProps {
  kind: string;
  id: string;
  name: string | null;
  operating: string;
  provisioning: string;
  /** What else the box says: protocol and port, address, a warning. */
  detail?: ComponentChildren;
  link: (id: string) => string;
}

function Node({ kind, id, name, operating, provisioning, detail, link }: NodeProps) {
  const label = name || id.slice(0, 8);
  return (
    <a class={`sg-node ${statusClass(operating)}`} href={link(id)}>
      <span class="sg-kind">{kind}</span>
      <span class="sg-name">{label}</span>
      {detail ? <span class="sg-detail">{detail}</span> : null}
      <span class="sg-badges">
        <Status value={operating} />
        <Status value={provisioning} />
      </span>
    </a>
  );
}

function Branch({ node, below }: { node: ComponentChildren; below?: ComponentChildren[] }) {
  return (
    <li class="sg-branch">
      {node}
      {below && below.length ? <ul class="sg-children">{below}</ul> : null}
    </li>
  );
}

export interface GraphDetails {
  /** "HTTP :8080" for a listener, "ROUND_ROBIN" for a pool: what the lists say and the tree does not. */
  listener(id: string): string | undefined;
  pool(id: string): string | undefined;
}

function ListenerDetail({ l, summary }: { l: ListenerStatus; summary: string | undefined }) {
  return (
    <>
      {summary ? <span>{summary}</span> : null}
      {l.certificate ? (
        <span class={l.certificate.warning ? 'sg-warning' : undefined}>
          Certificate {l.certificate.warning ?? `expires in ${Math.floor(l.certificate.days_to_expiry)} days`} ({l.certificate.not_after.slice(0, 10)})
        </span>
      ) : null}
      {l.status_reason ? <span class="sg-warning">{l.status_reason}</span> : null}
    </>
  );
}

function poolBranch(p: PoolStatus, details: GraphDetails, link: (id: string) => string, under: string) {
  const hm = p.health_monitor;
  return (
    <Branch
      key={`${under}/${p.id}`}
      node={<Node kind="Pool" id={p.id} name={p.name} operating={p.operating_status} provisioning={p.provisioning_status} detail={details.pool(p.id)} link={link} />}
      below={[
        ...(hm ? [<Branch key={hm.id} node={<Node kind="Health monitor" id={hm.id} name={hm.name} operating={hm.operating_status} provisioning={hm.provisioning_status} detail={hm.type} link={link} />} />] : []),
        ...p.members.map((m) => (
          <Branch key={m.id} node={<Node kind="Member" id={m.id} name={m.name} operating={m.operating_status} provisioning={m.provisioning_status} detail={<code>{`${m.address}:${m.protocol_port}`}</code>} link={link} />} />
        )),
      ]}
    />
  );
}

export function StatusGraph({ tree, details, link }: { tree: LoadBalancerStatus; details: GraphDetails; link: (id: string) => string }) {
  return (
    <div class="sg-wrap">
      <ul class="sg" aria-label={`Status tree of load balancer ${tree.name || tree.id}`}>
        <Branch
          node={<Node kind="Load balancer" id={tree.id} name={tree.name} operating={tree.operating_status} provisioning={tree.provisioning_status} detail={tree.status_reason ? <span class="sg-warning">{tree.status_reason}</span> : undefined} link={link} />}
          below={tree.listeners.map((l) => (
            <Branch
              key={l.id}
              node={<Node kind="Listener" id={l.id} name={l.name} operating={l.operating_status} provisioning={l.provisioning_status} detail={<ListenerDetail l={l} summary={details.listener(l.id)} />} link={link} />}
              below={l.pools.map((p) => poolBranch(p, details, link, l.id))}
            />
          ))}
        />
      </ul>
      {tree.listeners.length === 0 ? <p class="muted">No listener yet: nothing receives traffic.</p> : null}
    </div>
  );
}
